#!/usr/bin/env bash
# perf.sh: how efficient is the instrument? `loadgen perf` (package
# loadgen/internal/perfcmd) runs the loadgen's engines and the field's
# load tools side by side against one origin; this script installs the
# tools it is asked for (Debian's wrk, hey, nghttp2-client; vegeta from the
# Go module proxy), builds the loadgen and passes the variables on as flags.
#
#   scripts/perf.sh                      # 50 connections, 10 s, once
#   CONNS=100 DURATION=20 REPEATS=3 scripts/perf.sh   # median of 3 rounds
#   TOOLS="loadgen wrk" scripts/perf.sh
#   TLS_TOOLS="loadgen-h2 h2load" STREAMS=10 scripts/perf.sh   # the TLS table only with TOOLS=""
#   URL=http://127.0.0.1:8882/fast/ TOOL_CPU=0 scripts/perf.sh   # through a proxy of the stack (make up), the tools beside the origins as make bench places the loadgen
#   TLS_URL=https://127.0.0.1:8443/fast/ ...   # another TLS origin (a proxy's TLS port, under the stack's lock)
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=${TOOLS-"loadgen loadgen-netpoll loadgen-nethttp wrk hey vegeta"}
TLS_TOOLS=${TLS_TOOLS-"loadgen-tls wrk-tls loadgen-h2 h2load"}

source scripts/jobs.sh # apt_locked

need() { # command debian-package
  command -v "$1" >/dev/null && return
  echo "perf: installing $2 (apt-get)" >&2
  DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -q --no-install-recommends "$2" >/dev/null
}
vegeta=vegeta
for t in $TOOLS $TLS_TOOLS; do
  case $t in
    wrk|wrk-tls) need wrk wrk ;;
    hey) need hey hey ;;
    vegeta) vegeta=$(scripts/gobin.sh vegeta) ;;
    h2load) need h2load nghttp2-client ;;
  esac
done
need taskset util-linux

echo "perf: building loadgen" >&2
mkdir -p .cache/dist
go build -o .cache/dist/loadgen ./loadgen
args=(-tools "${TOOLS// /,}" -tls-tools "${TLS_TOOLS// /,}" -vegeta "$vegeta")
[ -z "${CONNS:-}" ] || args+=(-conns "$CONNS")
[ -z "${DURATION:-}" ] || args+=(-duration "${DURATION}s")
[ -z "${REPEATS:-}" ] || args+=(-repeats "$REPEATS")
[ -z "${STREAMS:-}" ] || args+=(-streams "$STREAMS")
[ -z "${URL:-}" ] || args+=(-url "$URL")
[ -z "${TLS_URL:-}" ] || args+=(-tls-url "$TLS_URL")
[ -z "${TOOL_CPU:-}" ] || args+=(-tool-cpu "$TOOL_CPU")
[ -z "${ORIGIN_CPU:-}" ] || args+=(-origin-cpu "$ORIGIN_CPU")
exec .cache/dist/loadgen perf "${args[@]}"
