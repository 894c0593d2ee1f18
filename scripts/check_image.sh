#!/usr/bin/env bash
# The container image's layout, checked without a Docker engine (deploy/Dockerfile):
#   1. `cmake --install` the build into a staging root, as the Dockerfile's build stage does;
#   2. every shared library the installed binaries load (ldd) must come from a package that
#      the runtime stage installs: one listed in deploy/runtime-packages.txt (the file the
#      Dockerfile reads) or a dependency apt brings with them;
#   3. the installed perceptrond runs from that root as an unprivileged user with the image's
#      flags (deploy/perceptrond.flags; only ports and data directory overridden), and answers
#      the gRPC health check through the installed CLI (the image's HEALTHCHECK) and /healthz.
# Usage: scripts/check_image.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: check_image.sh BUILD_DIR}
list=deploy/runtime-packages.txt
fail() { echo "check_image: $*" >&2; exit 1; }

grep -q 'runtime-packages.txt' deploy/Dockerfile || fail "deploy/Dockerfile does not read $list"
grep -q 'perceptrond.flags' deploy/Dockerfile || fail "deploy/Dockerfile does not use the flags file"

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -KILL "$server"; fi
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
stage=$work/stage
DESTDIR=$stage cmake --install "$build" --prefix /usr/local > /dev/null
bins=("$stage/usr/local/bin/perceptrond" "$stage/usr/local/bin/perceptron")
for b in "${bins[@]}"; do [ -x "$b" ] || fail "not installed: $b"; done
echo "check_image: installed $(cd "$stage" && find . -type f | sort | tr '\n' ' ')"

# What apt installs for the list: the packages and their dependencies, recursively.
mapfile -t listed < <(grep -v '^#' "$list" | grep -v '^$')
installs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances "${listed[@]}" | grep -v '^ ' | sed 's/:.*//' | sort -u)
# The package that holds each library file, from one dpkg query for all of them (a query per
# file costs half a second each; merged /usr: every file under both spellings and its real path).
mapfile -t libfiles < <(for b in "${bins[@]}"; do ldd "$b" | awk '/=> \//{print $3}'; done | sort -u)
candidates=()
for f in "${libfiles[@]}"; do candidates+=("$f" "$(realpath "$f")" "/usr$f" "${f#/usr}"); done
declare -A pkg_of
while IFS= read -r line; do
  case "$line" in diversion*) continue;; esac
  path=${line##*: }
  pkgs=${line%: *}
  pkg_of[$path]=${pkgs%%[:,]*}
done < <(dpkg -S "${candidates[@]}" 2>/dev/null || true)
owner() {
  local f=$1 cand
  for cand in "$f" "$(realpath "$f")" "/usr$f" "${f#/usr}"; do
    if [ -n "${pkg_of[$cand]:-}" ]; then echo "${pkg_of[$cand]}"; return; fi
  done
  echo "?"
}
problems=0
libs=0
for b in "${bins[@]}"; do
  if ldd "$b" | grep -q 'not found'; then ldd "$b" | grep 'not found' >&2; problems=1; fi
  if readelf -d "$b" | grep -qE 'RPATH|RUNPATH'; then
    fail "$b carries a run path into the build tree: $(readelf -d "$b" | grep -E 'RPATH|RUNPATH')"
  fi
  while read -r lib; do
    libs=$((libs + 1))
    pkg=$(owner "$lib")
    if ! grep -qx "$pkg" <<< "$installs"; then
      echo "check_image: $(basename "$b") loads $lib from package '$pkg', which the runtime" \
        "stage does not install (add it to $list)" >&2
      problems=1
    fi
  done < <(ldd "$b" | awk '/=> \//{print $3}')
done
[ "$problems" = 0 ] || fail "the runtime package list is incomplete"
echo "check_image: $libs libraries loaded, all from the ${#listed[@]} listed packages" \
  "or their dependencies"

# Run it as the image does, as an unprivileged user (nobody), from the staged root.
data=$work/data
mkdir -p "$data"
chown nobody:nogroup "$data"
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
# The files exist before the server starts: the background job opens them itself, and tail below
# would otherwise race it (and end at once on a file not yet there).
: > "$work/out"
: > "$work/err"
"${as_nobody[@]}" env -i PATH=/usr/bin:/bin "$stage/usr/local/bin/perceptrond" \
  --flagfile=deploy/perceptrond.flags --port=0 --http_port=0 --data_dir="$data/data" \
  > "$work/out" 2> "$work/err" &
server=$!
# Its first two lines give the ports: wait for them (bounded), not for a fixed time.
exec 3< <(tail -f "$work/out" --pid=$server)
read -r -t 60 line1 <&3 || fail "perceptrond printed nothing: $(cat "$work/err")"
read -r -t 60 line2 <&3 || fail "perceptrond printed no http line: $(cat "$work/err")"
exec 3<&-
case "$line1" in "perceptrond listening on 0.0.0.0:"*) ;; *) fail "unexpected: $line1";; esac
grpc_port=${line1##*:}
http_port=${line2##*:}
[ "$(stat -c %U "$data/data")" = nobody ] || fail "the data directory is not the user's"
"${as_nobody[@]}" "$stage/usr/local/bin/perceptron" health --server="127.0.0.1:$grpc_port" \
  || fail "the health check (the image's HEALTHCHECK) failed"
/usr/bin/python3 - "$http_port" <<'PY' || fail "/healthz did not answer SERVING"
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/healthz" % sys.argv[1], timeout=30) as r:
    assert r.status == 200 and r.read() == b"SERVING\n"
PY
kill -TERM "$server"
code=0
wait "$server" || code=$?
server=""
[ "$code" = 0 ] || fail "perceptrond exited with $code on SIGTERM: $(cat "$work/err")"
echo "check_image: the installed perceptrond ran as nobody with deploy/perceptrond.flags" \
  "(gRPC 0.0.0.0:$grpc_port, HTTP $http_port), answered health checks, stopped cleanly"
