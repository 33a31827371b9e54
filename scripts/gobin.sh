#!/usr/bin/env bash
# gobin.sh NAME: builds a third-party Go program at a pinned version from the
# Go module proxy into .cache/bin/NAME-VERSION[-TAGS] (static), once per
# version and build tags. Prints the binary's path. Versions and tags live
# here (internal/promtest names the Prometheus binaries for the tests).
# Callers running side by side (scripts/prepare.sh, scripts/images.sh) share
# one build: a second caller waits for the first one's binary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${PROXYBENCH_CACHE:-$PWD/.cache}/bin
mkdir -p "$BIN"

PROMETHEUS_VERSION=v0.316.0   # Prometheus 3.16
CADDY_VERSION=v2.11.9
TRAEFIK_VERSION=v3.6.12       # v3.7 needs modules the Go module proxy does not serve
VEGETA_VERSION=v12.13.0
COMPOSE_VERSION=v2.40.3     # the docker compose CLI plugin (Debian ships only compose v1)

name=${1:?usage: gobin.sh prometheus|promtool|caddy|traefik|vegeta|compose}
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local GOWORK=off
# The compiler collects its heap less often (GOGC 400, not 100): a cold
# Caddy build took 3-4 % less time and CPU in a quiet pair
# (docs/measured.md), for more memory per compile. The programs built are
# unchanged.
export GOGC=${GOGC:-400}
ldflags="-s -w"
# Prometheus's plugins/ registers every service discovery unless built with
# remove_all_sd (file, HTTP and static stay; enable_<name>_sd re-adds one).
# The lab's scrape configs need DNS discovery besides (the exporter job on
# a bridge network or a Swarm: one address per node), and a build without
# the other SDs compiles far less. The tags are part of the binary's name, so a
# binary built with other tags is never reused.
PROMETHEUS_TAGS=remove_all_sd,enable_dns_sd

build_in_moddir() { # module version pkg out [ldflags [tags]]
  local mod=$1 ver=$2 pkg=$3 out=$4
  go mod download "$mod@$ver" >/dev/null
  local dir; dir=$(go env GOMODCACHE)/$mod@$ver
  (cd "$dir" && go build -trimpath -tags "${6:-}" -ldflags "$ldflags ${5:-}" -o "$out.tmp" "$pkg") && mv "$out.tmp" "$out"
}

once() { # out cmd...: runs cmd unless out exists, one caller at a time
  local out=$1; shift
  [ -x "$out" ] && return 0
  exec 9>"$out.lock"
  flock 9
  [ -x "$out" ] || "$@"
}

case $name in
  prometheus|promtool)
    ver=$PROMETHEUS_VERSION; out=$BIN/$name-$ver-$PROMETHEUS_TAGS
    v=3.${ver#v0.}; v=${v%.*}.${ver##*.}
    pv="-X github.com/prometheus/common/version.Version=${v/3.316/3.16} -X github.com/prometheus/common/version.Branch=proxybench"
    once "$out" build_in_moddir github.com/prometheus/prometheus "$ver" ./cmd/$name "$out" "$pv" "$PROMETHEUS_TAGS" ;;
  caddy)
    ver=$CADDY_VERSION; out=$BIN/caddy-$ver
    once "$out" build_in_moddir github.com/caddyserver/caddy/v2 "$ver" ./cmd/caddy "$out" \
      "-X github.com/caddyserver/caddy/v2.CustomVersion=$ver" ;;
  traefik)
    ver=$TRAEFIK_VERSION; out=$BIN/traefik-$ver
    once "$out" build_in_moddir github.com/traefik/traefik/v3 "$ver" ./cmd/traefik "$out" \
      "-X github.com/traefik/traefik/v3/pkg/version.Version=${ver#v} -X github.com/traefik/traefik/v3/pkg/version.Codename=proxybench" ;;
  compose)
    ver=$COMPOSE_VERSION; out=$BIN/docker-compose-$ver
    once "$out" build_in_moddir github.com/docker/compose/v2 "$ver" ./cmd "$out" \
      "-X github.com/docker/compose/v2/internal.Version=$ver" ;;
  vegeta)
    ver=$VEGETA_VERSION; out=$BIN/vegeta-$ver
    once "$out" build_in_moddir github.com/tsenart/vegeta/v12 "$ver" . "$out" ;;
  *) echo "gobin: unknown program '$name' (want prometheus, promtool, caddy, traefik, vegeta or compose)" >&2; exit 2 ;;
esac
echo "$out"
