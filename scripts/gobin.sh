#!/usr/bin/env bash
# gobin.sh NAME: builds a third-party Go program at a pinned version from the
# Go module proxy into .cache/bin/NAME-VERSION (static), once per version.
# Prints the binary's path. Versions live here and nowhere else.
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
ldflags="-s -w"

build_in_moddir() { # module version pkg out [ldflags]
  local mod=$1 ver=$2 pkg=$3 out=$4
  go mod download "$mod@$ver" >/dev/null
  local dir; dir=$(go env GOMODCACHE)/$mod@$ver
  (cd "$dir" && go build -trimpath -ldflags "$ldflags ${5:-}" -o "$out.tmp" "$pkg") && mv "$out.tmp" "$out"
}

case $name in
  prometheus|promtool)
    ver=$PROMETHEUS_VERSION; out=$BIN/$name-$ver
    [ -x "$out" ] || {
      v=3.${ver#v0.}; v=${v%.*}.${ver##*.}
      pv="-X github.com/prometheus/common/version.Version=${v/3.316/3.16} -X github.com/prometheus/common/version.Branch=proxybench"
      build_in_moddir github.com/prometheus/prometheus "$ver" ./cmd/$name "$out" "$pv"; } ;;
  caddy)
    ver=$CADDY_VERSION; out=$BIN/caddy-$ver
    [ -x "$out" ] || build_in_moddir github.com/caddyserver/caddy/v2 "$ver" ./cmd/caddy "$out" \
      "-X github.com/caddyserver/caddy/v2.CustomVersion=$ver" ;;
  traefik)
    ver=$TRAEFIK_VERSION; out=$BIN/traefik-$ver
    [ -x "$out" ] || build_in_moddir github.com/traefik/traefik/v3 "$ver" ./cmd/traefik "$out" \
      "-X github.com/traefik/traefik/v3/pkg/version.Version=${ver#v} -X github.com/traefik/traefik/v3/pkg/version.Codename=proxybench" ;;
  compose)
    ver=$COMPOSE_VERSION; out=$BIN/docker-compose-$ver
    [ -x "$out" ] || build_in_moddir github.com/docker/compose/v2 "$ver" ./cmd "$out" \
      "-X github.com/docker/compose/v2/internal.Version=$ver" ;;
  vegeta)
    ver=$VEGETA_VERSION; out=$BIN/vegeta-$ver
    [ -x "$out" ] || build_in_moddir github.com/tsenart/vegeta/v12 "$ver" . "$out" ;;
  *) echo "gobin: unknown program '$name' (want prometheus, promtool, caddy, traefik, vegeta or compose)" >&2; exit 2 ;;
esac
echo "$out"
