#!/usr/bin/env bash
# Fails if a source file asks for a prefetch other than through core/prefetch.h's PrefetchLine:
# GCC 12 removes a bare __builtin_prefetch where the function around it otherwise only reads
# memory, and every call of two such functions once compiled to nothing (docs/design.md section 7).
# Usage: scripts/check_prefetch.sh [SOURCE_DIR]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
[ -d "$root/core" ] || { echo "no core/ under $root" >&2; exit 2; }
# The folders there are (a checkout without one of them still has the others checked).
dirs=()
for d in core server client common bench; do
  if [ -d "$root/$d" ]; then dirs+=("$root/$d"); fi
done
files=$(find "${dirs[@]}" \( -name '*.h' -o -name '*.cc' \) ! -path '*/core/prefetch.h')
[ -n "$files" ] || { echo "no sources under $root" >&2; exit 2; }
bad=$(grep -nHE '__builtin_prefetch|_mm_prefetch' $files || true)
if [ -n "$bad" ]; then
  echo "ask for prefetches through perceptron::PrefetchLine (core/prefetch.h):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "$(echo "$files" | wc -l) files: every prefetch goes through PrefetchLine"
