#!/usr/bin/env bash
# Installs every Debian package that building and testing the project needs, and nothing else.
# Safe to run again: packages already present are skipped, and apt is only touched when one is missing.
# Usage: scripts/setup.sh [--build-only | --run]   (as root, or with sudo available)
#   --build-only: only what building perceptrond and perceptron needs (the container image's
#   build stage), not the tests' tools.
#   --run: what building needs and what scripts/run.sh's demo reads (scikit-learn's data sets
#   from Debian's Python), not the tests' tools.
set -euo pipefail

build_packages=(
  cmake ninja-build g++ make pkg-config ca-certificates
  libabsl-dev libxxhash-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libleveldb-dev libsnappy-dev libisal-dev prometheus-cpp-dev libmicrohttpd-dev libgnutls28-dev
  libgoogle-perftools-dev libsimdjson-dev nlohmann-json3-dev libcsv-dev libutfcpp-dev
)

packages=(
  # Toolchain (CMakePresets.json's presets generate Ninja's files).
  cmake ninja-build g++ make pkg-config git ca-certificates clang-format
  # The security tests make their own CA and certificates.
  openssl
  # The AddressSanitizer build and its fuzz targets: clang with libFuzzer and the sanitizer runtimes.
  clang libclang-rt-14-dev
  # Libraries of core/ (Abseil; xxHash for the certificate's keys of kept rows) and its tests
  # and benchmarks.
  libabsl-dev libxxhash-dev libgtest-dev libgmock-dev libbenchmark-dev
  # The wire contract, the server and the client: gRPC, protobuf and their code generators
  # (libgrpc++-dev alone does not bring the compilers).
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # The data directory: LevelDB, and ISA-L's CRC-32 for our own record checks (zlib's, the tests'
  # independent check of it).
  libleveldb-dev libsnappy-dev libisal-dev zlib1g-dev
  # The programs' allocator: tcmalloc (CMakeLists.txt's PERCEPTRON_MALLOC).
  libgoogle-perftools-dev
  # JSON lines data files (client/data_reader_jsonl.cc): simdjson, and nlohmann/json (header-only)
  # for a line simdjson cannot read; CSV files' quoted cells: libcsv; names and labels checked as
  # UTF-8 before they are sent: utfcpp (header-only).
  libsimdjson-dev nlohmann-json3-dev libcsv-dev libutfcpp-dev
  # The Python package (client/python): built by pip with setuptools, tested with pytest; sparse
  # input through scipy.
  python3-grpcio python3-protobuf python3-pip python3-setuptools python3-pytest python3-scipy
  # The peer check (docs/design.md section 2) runs scikit-learn from Debian's Python; the package's
  # tests feed it pandas DataFrames (the package itself does not import pandas).
  python3 python3-numpy python3-sklearn python3-pandas
  # The certificate's independent solver (docs/design.md section 2.7): cvxopt's QP and cone programs.
  python3-cvxopt
  # Its peer at high dimension: liblinear's L1-loss SVC on the hashed rows (liblinear-train -s 3).
  liblinear-tools
  # The HTTP port: Prometheus metrics, the embedded web server (epoll, HTTPS through GnuTLS).
  prometheus-cpp-dev libmicrohttpd-dev libgnutls28-dev
  # Its tests: a Prometheus text parser, and the live page in a real headless Chromium.
  python3-prometheus-client python3-selenium chromium chromium-driver
  # The deployment manifests test reads YAML.
  python3-yaml
  # tests/e2e/disk_test.py: a full disk on a tmpfs and on ext4 made in a file, mounted through a
  # loop device.
  mount e2fsprogs
  # deploy/prometheus: promtool checks the rules and runs their unit tests; the real Prometheus
  # server scrapes a real perceptrond (its free port read back with ss, from iproute2).
  prometheus iproute2
  # deploy/nginx: shards behind a real nginx (gRPC proxying, consistent hashing on a header).
  nginx
  # The ThreadSanitizer preset rebuilds Debian's Abseil from its source package.
  dpkg-dev
  # tests/image: the container image built for real (a debootstrapped base, buildah with chroot
  # isolation) and run with podman (runc) and podman-compose; netavark with aardvark-dns gives
  # compose's containers each other's names (without recommends apt would pick the CNI plugins).
  debootstrap buildah podman runc podman-compose netavark aardvark-dns iptables catatonit
  slirp4netns uidmap fuse-overlayfs
)

case "${1:-}" in
  --build-only) packages=("${build_packages[@]}") ;;
  --run) packages=("${build_packages[@]}" python3 python3-sklearn) ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--build-only | --run]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
