#!/usr/bin/env bash
# Every test: install what is missing, build, run CTest; then the container image is built from
# deploy/Dockerfile and run (tests/image/image_test.sh), unless PERCEPTRON_SKIP_IMAGE=1 (for quick
# local runs; CI never sets it); then the same suite again built with
# AddressSanitizer and UndefinedBehaviorSanitizer (the `asan` preset) and with ThreadSanitizer
# (the `tsan` preset, after scripts/tsan_abseil.sh), unless PERCEPTRON_SKIP_SANITIZERS=1; then
# each libFuzzer target for FUZZ_SECONDS (20), unless PERCEPTRON_SKIP_FUZZ=1.
# Usage: scripts/test.sh [extra ctest flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release
cmake --build --preset release -j"$(nproc)"
ctest --preset release "$@"
if [ "${PERCEPTRON_SKIP_IMAGE:-0}" != 1 ]; then
  echo "== the container image, built and run (tests/image/image_test.sh)"
  tests/image/image_test.sh build/release
fi
if [ "${PERCEPTRON_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== the same tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  cmake --preset asan
  cmake --build --preset asan -j"$(nproc)"
  ctest --preset asan "$@"
  echo "== the same tests under ThreadSanitizer"
  scripts/tsan_abseil.sh
  cmake --preset tsan
  cmake --build --preset tsan -j"$(nproc)"
  ctest --preset tsan "$@"
fi
if [ "${PERCEPTRON_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== the fuzz targets, ${FUZZ_SECONDS:-20}s each"
  scripts/fuzz.sh
fi
