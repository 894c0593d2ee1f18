#!/usr/bin/env bash
# The main job on embedded defaults: install what is missing, build, start perceptrond on its
# default address (127.0.0.1:50051; PERCEPTROND_PORT to change), and stream through it
#   1. a synthetic stream (d=20) separable by a known unit vector u with margin 0.05, 2% of labels
#      flipped, into a model whose comparator is u: mistakes beside TD_gamma and the bound;
#   2. scikit-learn's breast_cancer.csv into a model whose comparator is the weight vector that
#      cyclic training on the same data ends with.
# The server is stopped (SIGTERM) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
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

echo; echo "== 1. A synthetic stream with a known separator u (the comparator)"
cli generate --dim=20 --count=200000 --margin=0.05 --noise=0.02 --seed=7 \
  --out="$work/synthetic.svm" --separator_out="$work/u.txt"
cli create synthetic --dim=20 --gamma=0.05 --comparator_file="$work/u.txt"
cli train "$work/synthetic.svm" --model=synthetic --progress=yes
cli status synthetic

csv=$(/usr/bin/python3 -c 'import os, sklearn; print(os.path.join(os.path.dirname(sklearn.__file__), "datasets", "data", "breast_cancer.csv"))')
echo; echo "== 2. $csv"
cli fit "$csv" --model=breast-cancer-fit --create --max_epochs=200
cli weights breast-cancer-fit > "$work/u_bc.txt"
cli create breast-cancer --dim=30 --gamma=0.01 --comparator_file="$work/u_bc.txt"
cli train "$csv" --model=breast-cancer --progress=yes
cli status breast-cancer

echo; echo "== The learning curve of breast-cancer, drawn by the CLI"
cli plot breast-cancer --out="$bin/breast-cancer.svg"
echo "(the live page was at http://127.0.0.1:$http_port/ while the server ran)"
