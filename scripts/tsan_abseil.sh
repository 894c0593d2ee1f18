#!/usr/bin/env bash
# ThreadSanitizer sees a mutex only if the code that locks it is instrumented, and perceptrond's
# locks are Abseil's (absl::Mutex, also under gRPC's own). This builds Debian's own Abseil
# (the source package of the installed libabsl20220623: same version, patches and inline
# namespace, so the same ABI) with -fsanitize=thread into build/tsan-deps/abseil/lib; the `tsan`
# test preset puts it first on LD_LIBRARY_PATH, in place of the uninstrumented one. Takes about
# a minute and a half on 2 cores; skipped when already built.
# Source packages come from the machine's own Debian mirror (its sources, read as deb-src), in a
# private apt state under build/tsan-deps: the system's apt configuration is not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/build/tsan-deps
if [ -f "$out/abseil/.built" ]; then
  echo "tsan_abseil: $out/abseil already built"
  exit 0
fi
version=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
mkdir -p "$out/apt/lists/partial" "$out/apt/cache/archives/partial" "$out/src"
# The machine's mirrors, as source entries.
sources=$out/apt/sources.list
: > "$sources"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -n 's/^deb \(.*\)$/deb-src \1/p' "$f" >> "$sources"
done
parts=$out/apt/sources.list.d
mkdir -p "$parts"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$parts/$(basename "$f")"
done
apt_opts=(-o "Dir::Etc::SourceList=$sources" -o "Dir::Etc::SourceParts=$parts"
          -o "Dir::State::Lists=$out/apt/lists" -o "Dir::Cache=$out/apt/cache"
          -o "APT::Sandbox::User=root" -qq)
apt-get "${apt_opts[@]}" update
( cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only "abseil=$version" )
rm -rf "$out/src/abseil"
dpkg-source -x "$out/src"/abseil_*.dsc "$out/src/abseil" > /dev/null
cmake -S "$out/src/abseil" -B "$out/abseil-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_INSTALL_PREFIX="$out/abseil" -DCMAKE_INSTALL_LIBDIR=lib > /dev/null
if ! cmake --build "$out/abseil-build" -j"$(nproc)" > "$out/abseil-build.log" 2>&1; then
  tail -40 "$out/abseil-build.log" >&2
  exit 1
fi
cmake --install "$out/abseil-build" > /dev/null
touch "$out/abseil/.built"
echo "tsan_abseil: built Debian's Abseil $version with ThreadSanitizer into $out/abseil"
