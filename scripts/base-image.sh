#!/usr/bin/env bash
# base-image.sh builds proxybench/debian: a Debian bookworm rootfs made with
# debootstrap plus the Debian packages the C proxies and the node/python
# origins need, imported as a local image. No registry is involved.
# The tag is a hash of the inputs, so an unchanged base is never rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES="nginx haproxy nodejs python3 ca-certificates procps"
TAG=proxybench/debian:$SUITE-$(printf '%s %s v1' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)

if docker image inspect "$TAG" >/dev/null 2>&1; then echo "$TAG"; exit 0; fi

command -v debootstrap >/dev/null || {
  [ "$(id -u)" = 0 ] || { echo "base-image: debootstrap is missing; install it (apt-get install debootstrap) and rerun" >&2; exit 1; }
  source scripts/jobs.sh # make prepare may run another apt-get meanwhile
  DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -q debootstrap >/dev/null; }

work=$(mktemp -d "${TMPDIR:-/tmp}/proxybench-rootfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "base-image: debootstrap $SUITE with: $PACKAGES (about 3 min, log $work.log)" >&2
debootstrap --variant=minbase --include="${PACKAGES// /,}" "$SUITE" "$work/root" "$MIRROR" >"$work.log" 2>&1 ||
  { tail -20 "$work.log" >&2; echo "base-image: debootstrap failed (mirror $MIRROR); see $work.log" >&2; exit 1; }
# Keep the image lean and the packaged services from expecting an init system.
rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/*
rm -f "$work/root"/etc/nginx/sites-enabled/default
tar -C "$work/root" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$TAG" >/dev/null
echo "$TAG"
