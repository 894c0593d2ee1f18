#!/usr/bin/env bash
# Fails if the core library (docs/design.md section 3) includes a gRPC or protobuf header, a generated .pb.h,
# or a header from another folder of the project.
# Usage: scripts/check_core_deps.sh [CORE_DIR]
set -euo pipefail
core=${1:-$(dirname "$0")/../core}
[ -d "$core" ] || { echo "no such directory: $core" >&2; exit 2; }
files=$(find "$core" -name '*.h' -o -name '*.cc' | wc -l)
bad=$(grep -nE '#include *[<"](grpc|grpcpp|google/protobuf)|\.pb\.h|#include *"(server|client|proto)/' \
  $(find "$core" -name '*.h' -o -name '*.cc') || true)
if [ -n "$bad" ]; then
  echo "core/ must not include gRPC, protobuf or other project folders:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "core/: $files files, none includes gRPC, protobuf or another project folder"
