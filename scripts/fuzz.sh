#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for FUZZ_SECONDS (default 20) from the committed seed
# corpus in tests/fuzz/corpus (copied, so the committed corpus is left as it is). A crash fails the
# run and leaves its input in build/asan. The targets are part of the `asan` preset's build (clang,
# ASan, UBSan, and every library compiled with the edge coverage libFuzzer reads), so
# after the AddressSanitizer stage of scripts/test.sh nothing is left to build here.
# Usage: scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$(nproc)" \
  --target learn_request_fuzzer data_reader_fuzzer import_blob_fuzzer
for target in learn_request data_reader import_blob; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$target/* "$work/"
  echo "== fuzzing $target for ${seconds}s"
  log="$work.log"
  status=0
  ( cd build/asan && ASAN_OPTIONS=detect_leaks=0 "./tests/fuzz/${target}_fuzzer" \
      -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 "$work" ) > "$log" 2>&1 ||
    status=$?
  grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)|artifact" "$log" || true
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzzing $target failed (exit $status)" >&2
    exit 1
  fi
  rm -f "$log"
done
