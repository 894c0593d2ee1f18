#!/usr/bin/env bash
# The container image, built and run for real (docs/operations.md, "Deployment"): deploy/Dockerfile built
# with buildah on the base of scripts/image_base.sh, then run with podman:
#   - every shared library of both binaries resolves inside the image (ldd);
#   - the server runs as the image's non-root user (uid 10001), answers gRPC health through the
#     published port, trains a model from the CLI inside the container and one from the CLI
#     outside, answers /metrics, and the image's HEALTHCHECK command succeeds;
#   - SIGTERM (podman stop) ends it with exit 0 within the stop timeout;
#   - a second container on the same volume holds both models bit for bit: ExportModel equal
#     byte for byte, the certificate's kept examples included (where they differ,
#     tests/image/compare_exports.py says what does);
#   - deploy/docker-compose.yml under podman-compose: the server, the demo stream and Prometheus
#     scraping the server (tests/image/compose_check.py).
# It prints the build time, the image's size and what takes it, and the start-up time.
# Usage: tests/image/image_test.sh BUILD_DIR   (the host build, for the CLI outside the image)
# Environment: PERCEPTRON_IMAGE_CACHE (scripts/image_base.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:?usage: image_test.sh BUILD_DIR}")
cli=$build/client/perceptron
image=localhost/perceptrond:test
run=perceptrond-test-$$
work=$(mktemp -d)
project=perceptrond-test-$$
containers=()
say() { echo "image_test: $*"; }
fail() {
  echo "image_test: FAILED: $*" >&2
  [ -s "$work/podman.err" ] && { echo "--- podman's errors" >&2; cat "$work/podman.err" >&2; }
  for c in "${containers[@]}"; do
    echo "--- podman logs $c" >&2
    podman logs "$c" 2>&1 | tail -30 >&2 || true
  done
  exit 1
}
cleanup() {
  for c in "${containers[@]}"; do podman rm -f -v -t 0 "$c" > /dev/null 2>&1 || true; done
  podman volume rm -f "$run" > /dev/null 2>&1 || true
  if [ -f "$work/compose-up" ]; then
    (cd deploy && podman-compose -p "$project" down -v > /dev/null 2>&1) || true
    podman network rm -f "${project}_default" > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
# podman's runtime is runc (crun refuses hybrid cgroup hierarchies), and a container's limits
# are set below the host's hard limits (podman's default of 1048576 open files is over them on
# such a machine, and runc cannot raise them): for podman run and podman-compose alike.
nofile=$(ulimit -Hn)
if [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ]; then nofile=65536; fi
cat > "$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$work/containers.conf
# podman's complaint that there is no systemd to schedule the HEALTHCHECK with goes to a file
# (the test runs the HEALTHCHECK command itself), shown if the test fails.
podman_run() { podman run "$@" 2>> "$work/podman.err"; }
seconds_since() { echo "$(($(date +%s%N) - $1))" | awk '{printf "%.1f", $1 / 1e9}'; }
# Waits for gRPC health at $1 (host:port), at most 60 s; prints the seconds it took from $2.
wait_healthy() {
  local deadline=$(($(date +%s) + 60))
  until "$cli" --server="$1" health > /dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1  # a retry's pause: the container is starting
  done
  seconds_since "$2"
}
published() { podman port "$1" "$2/tcp" | head -1 | sed 's/^0\.0\.0\.0:/127.0.0.1:/'; }
# N distinct free loopback ports below the kernel's ephemeral range, for podman to publish on.
# Not podman's own choice: it takes a free port from the ephemeral range and routes it to the
# container by a DNAT rule on the host's output, which the kernel does not see as a bound port,
# so it may hand the same port to another program's bind(0) (a test's server on port 0 beside
# this test), whose clients then reach the container, or nothing, instead of it.
free_ports() {
  /usr/bin/python3 - "$1" <<'PY'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
ports = []
for _ in range(10000):
    p = random.randrange(max(1024, low - 12000), low)
    if p in ports:
        continue
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    ports.append(p)
    if len(ports) == int(sys.argv[1]):
        break
if len(ports) < int(sys.argv[1]):
    sys.exit("image_test: no free port below the ephemeral range")
print(*ports)
PY
}

scripts/image_base.sh

say "building $image from deploy/Dockerfile"
start=$(date +%s%N)
buildah bud --quiet --isolation=chroot --pull=never --layers --format=docker \
  -f deploy/Dockerfile -t "$image" . > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2
  fail "the image did not build"
}
say "built in $(seconds_since "$start") s"
size=$(podman image inspect "$image" --format '{{.Size}}')
say "image size: $((size / 1000000)) MB; by layer:"
podman history --format '{{.Size}}\t{{.CreatedBy}}' "$image" | cut -c1-110 | sed 's/^/  /'
say "largest installed packages (KB):"
podman_run --rm --entrypoint /bin/sh "$image" -c \
  "dpkg-query -Wf '\${Installed-Size}\t\${Package}\n' | sort -rn | head -8" | sed 's/^/  /'
[ -n "$(podman image inspect "$image" --format '{{.Config.Healthcheck}}')" ] ||
  fail "the image has no HEALTHCHECK"

# Every library both binaries load resolves inside the image.
libs=$(podman_run --rm --entrypoint /bin/sh "$image" -c \
  'ldd /usr/local/bin/perceptrond /usr/local/bin/perceptron')
if grep -q "not found" <<< "$libs"; then
  fail "libraries missing from the image: $(grep 'not found' <<< "$libs" | tr '\n' ' ')"
fi
say "ldd: all $(grep -c '=>' <<< "$libs") library references resolve"

# The first container.
podman volume create "$run" > /dev/null
start=$(date +%s%N)
ports=$(free_ports 2) || fail "no free ports to publish on"
read -r grpc_port http_port <<< "$ports"
podman_run -d --name "$run-1" -p "127.0.0.1:$grpc_port:50051" -p "127.0.0.1:$http_port:8080" \
  -v "$run:/var/lib/perceptrond" "$image" > /dev/null
containers+=("$run-1")
grpc=$(published "$run-1" 50051)
http=$(published "$run-1" 8080)
took=$(wait_healthy "$grpc" "$start") || fail "no gRPC health at $grpc within 60 s"
say "start-up: healthy through $grpc $took s after podman run"

uid=$(podman exec "$run-1" grep '^Uid:' /proc/1/status | awk '{print $2}')
[ "$uid" = 10001 ] || fail "perceptrond runs as uid $uid, not 10001"
say "perceptrond runs as uid $uid ($(podman exec "$run-1" id -un))"

# A model trained by the CLI inside the container, another by the CLI outside.
podman exec "$run-1" sh -c 'set -e; cd /tmp
  perceptron generate --dim=20 --count=20000 --margin=0.05 --noise=0.02 --seed=7 \
    --out=s.svm --separator_out=u.txt > /dev/null
  perceptron --server=127.0.0.1:50051 create inside --dim=20 --gamma=0.05 \
    --comparator_file=u.txt > /dev/null
  perceptron --server=127.0.0.1:50051 train s.svm --model=inside --progress=no' \
  > "$work/inside.txt" || fail "the CLI inside the container could not train"
say "inside: $(cat "$work/inside.txt")"
"$cli" generate --dim=8 --count=5000 --margin=0.1 --seed=3 --out="$work/o.svm" > /dev/null
"$cli" --server="$grpc" train "$work/o.svm" --model=outside --create --dim=8 --progress=no \
  > "$work/outside.txt" || fail "the CLI outside could not train through $grpc"
say "outside: $(cat "$work/outside.txt")"
"$cli" --server="$grpc" status inside > "$work/status.txt"
grep -q "20000" "$work/status.txt" || fail "status of inside: $(cat "$work/status.txt")"

metrics=$(/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://%s/metrics" % sys.argv[1], timeout=30).read().decode())' \
  "$http") || fail "no /metrics at $http"
grep -q '^perceptron_model_examples_total{model="inside"} 20000' <<< "$metrics" ||
  fail "/metrics does not count inside's 20000 examples"
say "/metrics at $http: $(grep -c '^perceptron_' <<< "$metrics") perceptron_ samples"

podman healthcheck run "$run-1" > /dev/null || fail "the image's HEALTHCHECK command failed"
say "HEALTHCHECK: healthy"

# The certificate's refresher goes on after the last batch until its solve converges, and each
# solution it installs changes the model's state: the exports are taken once it has settled.
for m in inside outside; do
  deadline=$((SECONDS + 120))
  until "$cli" --server="$grpc" status "$m" > "$work/status.txt" &&
    { grep -q "frozen at example" "$work/status.txt" ||
      { grep -q "exact over all" "$work/status.txt" &&
        ! grep -q "not yet converged" "$work/status.txt"; }; }; do
    [ "$SECONDS" -lt "$deadline" ] ||
      fail "the certificate of $m did not settle within 120 s: $(cat "$work/status.txt")"
    sleep 0.2  # a poll's pause
  done
  say "$m: $(grep -A1 '^certificate' "$work/status.txt" | tr -s ' ' | tr '\n' ' ')"
  "$cli" --server="$grpc" export "$m" "$work/$m.1" > /dev/null || fail "export $m"
done

start=$(date +%s%N)
podman stop -t 30 "$run-1" > /dev/null 2>> "$work/podman.err"
took=$(seconds_since "$start")
code=$(podman inspect "$run-1" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "perceptrond exited $code on SIGTERM"
awk -v t="$took" 'BEGIN { exit !(t < 30) }' || fail "SIGTERM took $took s (stop timeout 30 s)"
say "SIGTERM: exit 0 in $took s"

# A second container on the same volume.
start=$(date +%s%N)
grpc_port=$(free_ports 1) || fail "no free port to publish on"
podman_run -d --name "$run-2" -p "127.0.0.1:$grpc_port:50051" -v "$run:/var/lib/perceptrond" \
  "$image" \
  > /dev/null
containers+=("$run-2")
grpc=$(published "$run-2" 50051)
took=$(wait_healthy "$grpc" "$start") || fail "the second container: no health within 60 s"
say "second container on the same volume: healthy in $took s"
for m in inside outside; do
  "$cli" --server="$grpc" export "$m" "$work/$m.2" > /dev/null || fail "export $m again"
  cmp -s "$work/$m.1" "$work/$m.2" ||
    fail "$m: ExportModel differs after the restart: $(/usr/bin/python3 \
      tests/image/compare_exports.py "$build/python" "$work/$m.1" "$work/$m.2" 2>&1)"
  say "$m: ExportModel equal byte for byte ($(stat -c %s "$work/$m.2") bytes)"
done
podman stop -t 30 "$run-2" > /dev/null 2>> "$work/podman.err"

# The compose file: the server, the demo stream and Prometheus, on ports chosen as above.
podman tag "$image" localhost/perceptrond:latest
start=$(date +%s%N)
buildah bud --quiet --isolation=chroot --pull=never --layers --format=docker \
  -t localhost/perceptrond-prometheus:latest deploy/prometheus > "$work/prometheus.log" 2>&1 || {
  tail -30 "$work/prometheus.log" >&2
  fail "deploy/prometheus/Dockerfile did not build"
}
say "Prometheus image built in $(seconds_since "$start") s"
say "podman-compose: deploy/docker-compose.yml (perceptrond, demo, prometheus)"
touch "$work/compose-up"
ports=$(free_ports 4) || fail "no free ports to publish on"
read -r grpc_port http_port prometheus_port grafana_port <<< "$ports"
export PERCEPTROND_GRPC_PUBLISH=127.0.0.1:$grpc_port PERCEPTROND_HTTP_PUBLISH=127.0.0.1:$http_port
export PROMETHEUS_PUBLISH=127.0.0.1:$prometheus_port GRAFANA_PUBLISH=127.0.0.1:$grafana_port
# A demo stream of 200,000 examples (the default's 2,000,000 take 40 s here, to show nothing more).
export PERCEPTRON_DEMO_COUNT=200000
(cd deploy && podman-compose -p "$project" up -d perceptrond prometheus) \
  > "$work/compose.log" 2>&1 ||
  { tail -30 "$work/compose.log" >&2; fail "podman-compose up"; }
containers+=("${project}_perceptrond_1" "${project}_prometheus_1")
grpc=$(published "${project}_perceptrond_1" 50051)
prom=$(published "${project}_prometheus_1" 9090)
start=$(date +%s%N)
wait_healthy "$grpc" "$start" > /dev/null || fail "compose: no health at $grpc"
(cd deploy && podman-compose -p "$project" run --no-deps --rm demo) > "$work/demo.log" 2>&1 ||
  { tail -30 "$work/demo.log" >&2; fail "demo"; }
say "compose demo: $(grep -m1 trained "$work/demo.log")"
grep -q "trained demo on stream.svm: $PERCEPTRON_DEMO_COUNT examples" "$work/demo.log" ||
  fail "compose: the demo did not stream PERCEPTRON_DEMO_COUNT=$PERCEPTRON_DEMO_COUNT examples"
/usr/bin/python3 tests/image/compose_check.py "$grpc" "$prom" "$cli" ||
  fail "compose: Prometheus does not scrape the server"
say "passed"
