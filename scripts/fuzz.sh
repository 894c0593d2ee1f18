#!/usr/bin/env bash
# Builds the libFuzzer targets and runs them all at once from the committed seed corpus in
# tests/fuzz/corpus (copied, so the committed corpus is left as it is), each for FUZZ_SECONDS
# (default 20) of a core's time: the targets share the machine's cores for FUZZ_SECONDS x targets /
# cores seconds (30 on two cores), half the wall time of one after another. A crash fails the
# run and leaves its input in build/asan. The targets are part of the `asan` preset's build (clang,
# ASan, UBSan, and every library compiled with the edge coverage libFuzzer reads), so
# after the AddressSanitizer stage of scripts/test.sh nothing is left to build here.
# Usage: scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
targets=(learn_request data_reader import_blob)
cores=$(nproc)
wall=$(( (seconds * ${#targets[@]} + cores - 1) / cores ))
(( wall > seconds )) || wall=$seconds
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$cores" --target "${targets[@]/%/_fuzzer}"
echo "== fuzzing ${targets[*]} at once for ${wall}s on $cores cores"
works=() pids=()
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$target/* "$work/"
  ( cd build/asan && ASAN_OPTIONS=detect_leaks=0 exec "./tests/fuzz/${target}_fuzzer" \
      -max_total_time="$wall" -max_len=65536 -print_final_stats=1 "$work" ) > "$work.log" 2>&1 &
  works+=("$work") pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  target=${targets[$i]} work=${works[$i]}
  status=0
  wait "${pids[$i]}" || status=$?
  echo "== $target"
  grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)|artifact" "$work.log" ||
    true
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    tail -40 "$work.log" >&2
    echo "fuzzing $target failed (exit $status)" >&2
    failed=1
    continue
  fi
  rm -f "$work.log"
done
exit "$failed"
