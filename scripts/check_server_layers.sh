#!/usr/bin/env bash
# Fails if a file of server/ includes a header of a layer it may not use (docs/design.md section 3):
#   model    -> (none)                    storage -> model
#   ops      -> model, storage            auth    -> (none)
#   rpc      -> model, storage, ops, auth http    -> model, ops, auth
#   server/  -> any layer (the process assembles them); no layer includes server/*.h at the top.
# Usage: scripts/check_server_layers.sh [SERVER_DIR]
set -euo pipefail
server=${1:-$(dirname "$0")/../server}
[ -d "$server" ] || { echo "no such directory: $server" >&2; exit 2; }
declare -A allowed=(
  [model]=""
  [storage]="model"
  [ops]="model storage"
  [auth]=""
  [rpc]="model storage ops auth"
  [http]="model ops auth"
)
bad=0
checked=0
for layer in "${!allowed[@]}"; do
  [ -d "$server/$layer" ] || { echo "server/$layer is missing" >&2; bad=1; continue; }
  while IFS= read -r -d '' file; do
    checked=$((checked + 1))
    while IFS= read -r used; do
      [ "$used" = "$layer" ] && continue
      case " ${allowed[$layer]} " in
        *" $used "*) ;;
        *) echo "${file#"$server"/}: includes server/$used (a $layer file may use: ${allowed[$layer]:-no other layer})" >&2
           bad=1 ;;
      esac
    done < <(grep -oE '#include *"server/[a-z_]+(/|\.h")' "$file" | sed -E 's|.*"server/||; s|/$||; s|\.h"$| (the process)|' | sort -u)
  done < <(find "$server/$layer" -name '*.h' -print0 -o -name '*.cc' -print0)
done
# Nothing outside the known layers but the process itself.
for dir in "$server"/*/; do
  name=$(basename "$dir")
  [ -n "${allowed[$name]+x}" ] && continue
  echo "server/$name/ is not a known layer" >&2
  bad=1
done
if [ "$bad" != 0 ]; then
  echo "server/ layers: a dependency points the wrong way (above)" >&2
  exit 1
fi
echo "server/: $checked files in 6 layers, every include points down (model <- storage <- ops <- rpc, http; auth <- rpc, http)"
