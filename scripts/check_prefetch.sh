#!/usr/bin/env bash
# Fails if a source file asks for a prefetch other than through core/prefetch.h's PrefetchLine:
# GCC 12 removes a bare __builtin_prefetch where the function around it otherwise only reads
# memory, and every call of two such functions once compiled to nothing (docs/design.md section 7).
# Usage: scripts/check_prefetch.sh [SOURCE_DIR]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
[ -d "$root/core" ] || { echo "no core/ under $root" >&2; exit 2; }
files=$(find "$root"/core "$root"/server "$root"/client "$root"/common "$root"/bench \
  \( -name '*.h' -o -name '*.cc' \) ! -path '*/core/prefetch.h' 2>/dev/null)
bad=$(grep -nE '__builtin_prefetch|_mm_prefetch' $files || true)
if [ -n "$bad" ]; then
  echo "ask for prefetches through perceptron::PrefetchLine (core/prefetch.h):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "$(echo "$files" | wc -l) files: every prefetch goes through PrefetchLine"
