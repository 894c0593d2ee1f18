#!/usr/bin/env bash
# The base image deploy/Dockerfile builds FROM (debian:12 and debian:12-slim), made here from
# Debian's own packages with no registry: debootstrap's minbase of bookworm, trimmed as Debian's
# slim image is (no documentation, manual pages or translations; no apt lists or downloaded
# packages), imported into podman and tagged with both names. The root file system is kept as a
# tarball in the cache directory, so a second run only imports it (and a run that finds both tags
# in podman's store does nothing).
# Usage: scripts/image_base.sh
# Environment: PERCEPTRON_IMAGE_CACHE (default /var/cache/perceptrond-image),
#   PERCEPTRON_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cache=${PERCEPTRON_IMAGE_CACHE:-/var/cache/perceptrond-image}
mirror=${PERCEPTRON_DEBIAN_MIRROR:-http://deb.debian.org/debian}
tarball=$cache/debian-bookworm-minbase.tar

if podman image exists localhost/debian:12 && podman image exists localhost/debian:12-slim; then
  exit 0
fi
mkdir -p "$cache"
if [ ! -f "$tarball" ]; then
  root=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  echo "image_base: debootstrap --variant=minbase bookworm from $mirror"
  start=$(date +%s)
  debootstrap --variant=minbase bookworm "$root" "$mirror" > "$cache/debootstrap.log" 2>&1 || {
    tail -20 "$cache/debootstrap.log" >&2
    exit 1
  }
  # Slim: what Debian's slim image leaves out, for every package installed later too.
  cat > "$root/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
  find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
  # Downloaded packages and lists go as soon as apt is done, as in Debian's images.
  cat > "$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
  cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
    "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/var/log/apt/*
  tar -C "$root" --numeric-owner -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
  echo "image_base: root file system in $(($(date +%s) - start)) s," \
    "$(du -m "$tarball" | cut -f1) MB: $tarball"
fi
podman import --quiet "$tarball" localhost/debian:bookworm > /dev/null
podman tag localhost/debian:bookworm localhost/debian:12 localhost/debian:12-slim
echo "image_base: localhost/debian:12 and localhost/debian:12-slim from $tarball"
