#!/usr/bin/env bash
# The main job on embedded defaults: install what is missing, build, start perceptrond on its
# default address (127.0.0.1:50051; PERCEPTROND_PORT to change; the live page on port 8080,
# PERCEPTROND_HTTP_PORT), and stream through it
#   1. scikit-learn's breast_cancer.csv into a model given no comparator: its mistakes beside the
#      certificate, the best bound over every comparator, which the server computes itself;
#   2. a synthetic stream (d=20) separable by a known unit vector u with margin 0.05, 2% of labels
#      flipped, into a model whose comparator is u: TD_gamma and the theorem's bound for that u
#      beside the certificate.
# Then, when standard input is a terminal, the server keeps serving (the page, the CLI, Python)
# until Ctrl-C; otherwise, or with --stop, it is stopped (SIGTERM) at once.
set -euo pipefail
cd "$(dirname "$0")/.."
stop=0
case "${1:-}" in
  --stop) stop=1 ;;
  "") [ -t 0 ] || stop=1 ;;
  *) echo "usage: scripts/run.sh [--stop]" >&2; exit 2 ;;
esac
scripts/setup.sh --run
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target perceptrond perceptron
bin=build/release
port=${PERCEPTROND_PORT:-50051}
http_port=${PERCEPTROND_HTTP_PORT:-8080}
work=$(mktemp -d)
"$bin/server/perceptrond" --port="$port" --http_port="$http_port" --data_dir="$work/data" > "$work/server.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
cli() { "$bin/client/perceptron" --server="127.0.0.1:$port" "$@"; }
if ! cli health > /dev/null; then
  echo "perceptrond did not start:" >&2; cat "$work/server.log" >&2; exit 1
fi
echo "== perceptrond is up: $(head -1 "$work/server.log")"
echo "   the live page: http://127.0.0.1:$http_port/"

# Waits until MODEL's certificate has settled: a converged solution covers every example it
# learned, or it is frozen (its limit of kept examples reached) or off; the server solves in
# the background, a fraction of a second here. At most 60 s.
settled() {
  for _ in $(seq 600); do
    if cli status "$1" --format=json | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)["stats"]["certificate"]
sys.exit(0 if c["state"] in ("FROZEN", "OFF") or (
    c["available"] and c["converged"] and c["solved"] == c["examples"]) else 1)'; then
      return 0
    fi
    sleep 0.1  # a poll's pause
  done
  echo "(the certificate of $1 is still being computed)"
}

csv=$(/usr/bin/python3 -c 'import os, sklearn; print(os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "breast_cancer.csv"))')
echo; echo "== 1. $csv, with no comparator given"
cli create breast-cancer --dim=30
cli train "$csv" --model=breast-cancer --progress=yes
settled breast-cancer
cli status breast-cancer

echo; echo "== 2. A synthetic stream with a known separator u, given as the comparator"
cli generate --dim=20 --count=200000 --margin=0.05 --noise=0.02 --seed=7 \
  --out="$work/synthetic.svm" --separator_out="$work/u.txt"
cli create synthetic --dim=20 --gamma=0.05 --comparator_file="$work/u.txt"
cli train "$work/synthetic.svm" --model=synthetic --progress=yes
settled synthetic
cli status synthetic

echo; echo "== The learning curve of breast-cancer, drawn by the CLI"
cli plot breast-cancer --out="$bin/breast-cancer.svg"

if [ "$stop" = 1 ]; then
  echo "(stopping the server: scripts/run.sh from a terminal keeps it serving the page)"
  exit 0
fi
echo
echo "== perceptrond serves on 127.0.0.1:$port, its live page at http://127.0.0.1:$http_port/"
echo "   Try: PERCEPTRON_SERVER=127.0.0.1:$port $bin/client/perceptron list"
echo "   Ctrl-C stops it (its data directory, $work/data, goes with it)."
trap 'echo; echo "stopping"' INT
wait "$server" || true
