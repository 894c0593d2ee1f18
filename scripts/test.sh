#!/usr/bin/env bash
# Every test: install what is missing, build, run CTest; then the container image is built from
# deploy/Dockerfile and run (tests/image/image_test.sh), unless PERCEPTRON_SKIP_IMAGE=1 (for quick
# local runs; CI never sets it); then the same suite again built with
# AddressSanitizer and UndefinedBehaviorSanitizer (the `asan` preset) and with ThreadSanitizer
# (the `tsan` preset, after scripts/tsan_abseil.sh; the tests that start no thread neither built
# nor run), unless PERCEPTRON_SKIP_SANITIZERS=1; then
# the libFuzzer targets, at once, each for FUZZ_SECONDS (20) of a core's time, unless
# PERCEPTRON_SKIP_FUZZ=1.
# The sanitizer builds run in the background at the lowest priority (nice 19), on what the stages
# before theirs leave of the cores: the asan build from the release tests on (their processes
# wait on servers and sockets much of the time, the image's stage on podman and the mirror), the
# tsan build (after scripts/tsan_abseil.sh) beside the asan tests. Each sanitizer stage waits for
# its build and prints its output, its time and the wait.
# Usage: scripts/test.sh [extra ctest flags]
# Each stage's wall time is printed when it ends, and the whole run's at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
stage_name="" stage_start=$SECONDS
stage() {
  if [ -n "$stage_name" ]; then
    echo "== stage done: $stage_name, $((SECONDS - stage_start)) s (total $SECONDS s)"
  fi
  stage_name=$1 stage_start=$SECONDS
  [ -z "$1" ] || echo "== $1"
}
builds=()  # the background builds' process groups
stop_builds() {
  for b in "${builds[@]}"; do kill -- "-$b" 2> /dev/null || kill "$b" 2> /dev/null || true; done
}
trap 'rc=$?; [ $rc = 0 ] || echo "== stage failed (exit $rc): $stage_name"
      stage ""; stop_builds' EXIT
# in_background NAME COMMANDS: COMMANDS (a bash script) in a process group of their own at the
# lowest priority, their output in build/NAME.log; the group's id in $built. The group is a
# session of its own, which Linux schedules as a group (autogroup) beside the run's: that group's
# nice value is set to 19 too, or it would share the cores half and half with the run's.
in_background() {
  mkdir -p build
  nice -n 19 setsid bash -c "set -e; start=\$SECONDS
    [ ! -w /proc/self/autogroup ] || echo 19 > /proc/self/autogroup; $2
    echo \"== $1: \$((SECONDS - start)) s in the background\"" > "build/$1.log" 2>&1 &
  built=$!
  builds+=("$built")
}
# await NAME PID: waits for in_background's build NAME and prints its output; fails if it failed.
await() {
  local waited=$SECONDS
  if ! wait "$2"; then
    cat "build/$1.log"
    echo "$1 failed" >&2
    exit 1
  fi
  cat "build/$1.log"
  echo "== $1: waited $((SECONDS - waited)) s for it"
}
# build PRESET: the preset's build, and once more if it fails, which builds only what failed:
# GCC 12 crashed here once (an internal compiler error in a test's use of its precompiled header)
# and built the same file the next time, where a compile error fails again.
build() {
  cmake --build --preset "$1" -j"$(nproc)" || {
    echo "== the $1 build failed; building once more, to tell a compiler's crash from an error"
    cmake --build --preset "$1" -j"$(nproc)"
  }
}
export -f build
stage "setup"
scripts/setup.sh
if [ "${PERCEPTRON_SKIP_IMAGE:-0}" != 1 ]; then
  # The image's base (scripts/image_base.sh: on a new machine a debootstrap from the mirror, mostly
  # waiting on the network) is made while the release build runs; the image stage waits for it.
  mkdir -p build
  scripts/image_base.sh > build/image_base.log 2>&1 &
  image_base=$!
fi
stage "release build"
cmake --preset release
build release
if [ "${PERCEPTRON_SKIP_SANITIZERS:-0}" != 1 ]; then
  in_background asan-build 'cmake --preset asan; build asan'
  asan_build=$built
fi
stage "release tests"
ctest --preset release "$@"
if [ "${PERCEPTRON_SKIP_IMAGE:-0}" != 1 ]; then
  stage "the container image, built and run (tests/image/image_test.sh)"
  if ! wait "$image_base"; then
    cat build/image_base.log >&2
    echo "scripts/image_base.sh failed" >&2
    exit 1
  fi
  cat build/image_base.log
  tests/image/image_test.sh build/release
fi
if [ "${PERCEPTRON_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "the same tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  await asan-build "$asan_build"
  in_background tsan-build \
    'scripts/tsan_abseil.sh; cmake --preset tsan; build tsan'
  tsan_build=$built
  ctest --preset asan "$@"
  stage "the same tests under ThreadSanitizer"
  await tsan-build "$tsan_build"
  # The tests that start no thread (the core library's; tests of the server's and client's pure
  # functions): nothing for ThreadSanitizer to find there (they run under the release build and
  # AddressSanitizer above); the preset does not build them.
  ctest --preset tsan -LE single_threaded "$@"
fi
if [ "${PERCEPTRON_SKIP_FUZZ:-0}" != 1 ]; then
  stage "the fuzz targets, at once, ${FUZZ_SECONDS:-20} s of a core each"
  scripts/fuzz.sh
fi
