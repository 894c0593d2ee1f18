#!/usr/bin/env bash
# Every test: install what is missing, build everything (release), run CTest.
# Usage: scripts/test.sh [extra ctest flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release
cmake --build --preset release -j"$(nproc)"
ctest --preset release "$@"
