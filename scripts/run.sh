#!/usr/bin/env bash
# The main job on embedded defaults: install what is missing, build (release), and run the demo.
# Usage: scripts/run.sh [demo flags, e.g. --examples 20000]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target perceptron_core_demo
exec build/release/demo/perceptron_core_demo "$@"
