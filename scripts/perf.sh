#!/usr/bin/env bash
# perf.sh: how efficient is the instrument? Side-by-side closed-loop
# throughput against the fast origin on loopback: proxybench loadgen vs wrk
# vs hey vs vegeta, same connections and duration, each load tool pinned to
# CPU 1 and the origin to CPU 0. The figure of merit is requests per
# CPU-second of the LOAD TOOL (user+sys of the tool's process and children,
# from /usr/bin/time): on a shared machine the origin's speed varies, the
# cost per request of the tool much less.
#
#   scripts/perf.sh                      # 50 connections, 10 s, once
#   CONNS=100 DURATION=20 REPEATS=3 scripts/perf.sh   # median of 3 rounds
#   TOOLS="loadgen wrk" scripts/perf.sh
#   TLS_TOOLS="loadgen-h2 h2load" STREAMS=10 scripts/perf.sh   # the TLS table only with TOOLS=""
#   URL=http://127.0.0.1:8882/fast/ TOOL_CPU=0 scripts/perf.sh   # through a proxy of the stack (make up), the tools beside the origins as make bench places the loadgen
#
# A second table compares the TLS engines on a TLS origin (a minimal
# net/http server with the lab certificate of .cache/tls, HTTP/2 and
# HTTP/1.1, on 127.0.0.1:9105 and CPU 0; TLS_URL=https://... takes another,
# e.g. a proxy's TLS port of the stack under its lock): loadgen -proto tls
# vs wrk over https, loadgen -proto h2 vs h2load (nghttp2-client), same
# connections, and STREAMS concurrent streams per connection for h2.
#
# It builds and starts what it needs on 127.0.0.1:9104 unless something
# already answers there, and stops only what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-50}
DURATION=${DURATION:-10}
REPEATS=${REPEATS:-1}
TOOLS=${TOOLS-"loadgen loadgen-netpoll loadgen-nethttp wrk hey vegeta"}
TLS_TOOLS=${TLS_TOOLS-"loadgen-tls wrk-tls loadgen-h2 h2load"}
STREAMS=${STREAMS:-10}
TLS_ADDR=127.0.0.1:9105
ADDR=127.0.0.1:9104
URL=${URL:-http://$ADDR/}
TOOL_CPU=${TOOL_CPU:-1}
ORIGIN_CPU=${ORIGIN_CPU:-0}

source scripts/jobs.sh # apt_locked; its EXIT trap (job_stop_all) is replaced below: no job is started here
tmp=$(mktemp -d)
origin_pid=
tls_pid=
cleanup() {
  for p in $origin_pid $tls_pid; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

need() { # command debian-package
  command -v "$1" >/dev/null && return
  echo "perf: installing $2 (apt-get)" >&2
  DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -q --no-install-recommends "$2" >/dev/null
}
for t in $TOOLS $TLS_TOOLS; do
  case $t in
    wrk|wrk-tls) need wrk wrk ;;
    hey) need hey hey ;;
    vegeta) VEGETA=$(scripts/gobin.sh vegeta) ;;
    h2load) need h2load nghttp2-client ;;
  esac
done
[ -x /usr/bin/time ] || need /usr/bin/time time
need bc bc
need curl curl
need taskset util-linux

echo "perf: building loadgen" >&2
go build -o "$tmp/loadgen" ./loadgen

up() { curl -fsS -m 1 -o /dev/null "$URL" 2>/dev/null; }
origin_note="something already answering at $URL (not started or pinned by this script)"
if ! up; then
  if go build -o "$tmp/origin" ./origins/fast 2>/dev/null; then
    origin_note="origins/fast"
  elif go build -o "$tmp/origin" ./origins/go 2>/dev/null; then
    origin_note="origins/go (origins/fast did not build)"
  else
    mkdir -p "$tmp/srv"
    cat >"$tmp/srv/main.go" <<'GO'
package main

import "net/http"

func main() {
	http.ListenAndServe("127.0.0.1:9104", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "perf")
		w.Write([]byte("proxybench origin ok\n"))
	}))
}
GO
    (cd "$tmp/srv" && printf 'module perfsrv\ngo 1.26\n' >go.mod && go build -o "$tmp/origin" .)
    origin_note="a minimal net/http server (neither origin built)"
  fi
  ORIGIN_NAME=fast LISTEN_ADDR=127.0.0.1 PORT=9104 taskset -c "$ORIGIN_CPU" "$tmp/origin" 2>"$tmp/origin.log" &
  origin_pid=$!
  origin_note="$origin_note, pinned with taskset -c $ORIGIN_CPU"
  for _ in $(seq 50); do up && break; sleep 0.1; done
  up || { echo "perf: origin did not come up on $ADDR:" >&2; cat "$tmp/origin.log" >&2; exit 1; }
fi

tls_note=
if [ -n "$TLS_TOOLS" ]; then
  if [ -n "${TLS_URL:-}" ]; then
    tls_note="$TLS_URL (not started or pinned by this script)"
  else
    TLS_URL=https://$TLS_ADDR/
    "$tmp/loadgen" certs >/dev/null # the lab CA and certificate in .cache/tls
    mkdir -p "$tmp/tlssrv"
    cat >"$tmp/tlssrv/main.go" <<'GO'
package main

import (
	"net/http"
	"os"
)

// A TLS origin for the TLS engines' benchmark: HTTP/2 and HTTP/1.1 (ALPN),
// the body of origins/fast.
func main() {
	body := []byte("proxybench origin ok\n")
	srv := &http.Server{Addr: os.Args[1], Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "perf")
		w.Write(body)
	})}
	panic(srv.ListenAndServeTLS(os.Args[2], os.Args[3]))
}
GO
    (cd "$tmp/tlssrv" && printf 'module perftls\ngo 1.26\n' >go.mod && go build -o "$tmp/tlsorigin" .)
    taskset -c "$ORIGIN_CPU" "$tmp/tlsorigin" "$TLS_ADDR" .cache/tls/server.crt .cache/tls/server.key >/dev/null 2>"$tmp/tlsorigin.log" &
    tls_pid=$!
    tls_note="a minimal net/http TLS server (HTTP/2 and HTTP/1.1, lab certificate), pinned with taskset -c $ORIGIN_CPU"
    for _ in $(seq 50); do curl -fsS -m 1 --cacert .cache/tls/ca.crt -o /dev/null "$TLS_URL" 2>/dev/null && break; sleep 0.1; done
  fi
fi

# run TOOL: prints "requests cpu_seconds"
run() {
  local t=$1 out=$tmp/$1.out
  local timed=(/usr/bin/time -f "%U %S" -o "$tmp/time" taskset -c "$TOOL_CPU")
  case $t in
    loadgen-tls) "${timed[@]}" "$tmp/loadgen" attack -proto tls -url "$TLS_URL" -c "$CONNS" -d "${DURATION}s" -json -quiet >"$out" 2>&1
      req=$(sed -n 's/^  "requests": \([0-9]*\),/\1/p' "$out") ;;
    loadgen-h2) "${timed[@]}" "$tmp/loadgen" attack -proto h2 -streams "$STREAMS" -url "$TLS_URL" -c "$CONNS" -d "${DURATION}s" -json -quiet >"$out" 2>&1
      req=$(sed -n 's/^  "requests": \([0-9]*\),/\1/p' "$out") ;;
    wrk-tls) "${timed[@]}" wrk -t1 -c "$CONNS" -d "${DURATION}s" "$TLS_URL" >"$out" 2>&1
      req=$(awk '/requests in/ {print $1}' "$out") ;;
    h2load) "${timed[@]}" h2load -t1 -c "$CONNS" -m "$STREAMS" -D "${DURATION}" "$TLS_URL" >"$out" 2>&1
      req=$(awk '/^requests:/ {print $8}' "$out") ;;
    loadgen) "${timed[@]}" "$tmp/loadgen" attack -url "$URL" -c "$CONNS" -d "${DURATION}s" -json -quiet >"$out" 2>&1
      req=$(sed -n 's/^  "requests": \([0-9]*\),/\1/p' "$out") ;;
    loadgen-netpoll) "${timed[@]}" "$tmp/loadgen" attack -engine netpoll -url "$URL" -c "$CONNS" -d "${DURATION}s" -json -quiet >"$out" 2>&1
      req=$(sed -n 's/^  "requests": \([0-9]*\),/\1/p' "$out") ;;
    loadgen-nethttp) "${timed[@]}" "$tmp/loadgen" attack -engine net-http -url "$URL" -c "$CONNS" -d "${DURATION}s" -json -quiet >"$out" 2>&1
      req=$(sed -n 's/^  "requests": \([0-9]*\),/\1/p' "$out") ;;
    wrk) "${timed[@]}" wrk -t1 -c "$CONNS" -d "${DURATION}s" "$URL" >"$out" 2>&1
      req=$(awk '/requests in/ {print $1}' "$out") ;;
    hey) "${timed[@]}" hey -c "$CONNS" -z "${DURATION}s" -disable-compression "$URL" >"$out" 2>&1
      req=$(awk '/responses$/ {gsub(/[^0-9]/,"",$2); s+=$2} END {print s+0}' "$out") ;;
    vegeta) echo "GET $URL" | "${timed[@]}" "$VEGETA" attack -rate=0 -workers "$CONNS" -max-workers "$CONNS" \
        -connections "$CONNS" -duration "${DURATION}s" >"$tmp/vegeta.bin" 2>"$out"
      "$VEGETA" report <"$tmp/vegeta.bin" >>"$out"
      req=$(awk -F'[ ,]+' '/^Requests/ {print $5}' "$out") ;;
    *) echo "perf: unknown tool $t" >&2; exit 2 ;;
  esac
  [ -n "$req" ] || { echo "perf: could not read $t's request count:" >&2; cat "$out" >&2; exit 1; }
  read -r u s <"$tmp/time"
  echo "$req $(echo "$u + $s" | bc -l)"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "perf: $CONNS connections, ${DURATION}s per tool, $REPEATS round(s); tools pinned with taskset -c $TOOL_CPU; origin: $origin_note" >&2
[ -z "$TLS_TOOLS" ] || echo "perf: TLS origin: $tls_note; h2 with $STREAMS streams per connection" >&2
echo "perf: load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
declare -A RPS EFF
for r in $(seq "$REPEATS"); do
  for t in $TOOLS $TLS_TOOLS; do
    read -r req cpu < <(run "$t")
    rps=$(echo "$req / $DURATION" | bc -l)
    eff=$(echo "if ($cpu > 0) $req / $cpu else 0" | bc -l)
    printf 'perf: round %d %-16s %9d requests  %7.2f CPU-s  %9.0f req/s  %9.0f req/CPU-s\n' "$r" "$t" "$req" "$cpu" "$rps" "$eff" >&2
    RPS[$t]+="$rps "
    EFF[$t]+="$eff "
  done
done
echo "perf: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

declare -A MED
for t in $TOOLS $TLS_TOOLS; do
  MED[$t]=$(echo "${EFF[$t]}" | tr ' ' '\n' | grep . | median)
done

# baseline TOOL: the loadgen engine TOOL is compared with; want TOOL: the target ratio
baseline() {
  case $1 in
    wrk-tls) echo loadgen-tls ;; h2load) echo loadgen-h2 ;; loadgen-tls|loadgen-h2) ;; *) echo loadgen ;;
  esac
}
want() {
  case $1 in
    wrk|wrk-tls|h2load) echo 0.8 ;; hey) echo 1.5 ;; vegeta) echo 2 ;;
  esac
}

# table TITLE TOOLS...
table() {
  local title=$1; shift
  echo
  echo "$title"
  echo
  echo "| tool | requests/s | requests per tool CPU-second | loadgen's efficiency vs this tool | target |"
  echo "|---|---:|---:|---:|---|"
  for t in "$@"; do
    local rps ratio="-" target="-" b w
    rps=$(echo "${RPS[$t]}" | tr ' ' '\n' | grep . | median)
    b=$(baseline "$t")
    if [ -n "$b" ] && [ -n "${MED[$b]:-}" ] && [ "$b" != "$t" ]; then
      ratio=$(printf '%.2fx (%s)' "$(echo "${MED[$b]} / ${MED[$t]}" | bc -l)" "$b")
      w=$(want "$t")
      if [ -n "$w" ]; then
        if [ "$(echo "${MED[$b]} >= $w * ${MED[$t]}" | bc -l)" = 1 ]; then target=">= ${w}x: met"; else target=">= ${w}x: NOT met"; fi
      fi
    fi
    printf '| %s | %.0f | %.0f | %s | %s |\n' "$t" "$rps" "${MED[$t]}" "$ratio" "$target"
  done
}
# shellcheck disable=SC2086 # word lists
[ -z "$TOOLS" ] || table "Closed loop, $CONNS connections, ${DURATION}s, median of $REPEATS; load tool on CPU $TOOL_CPU (taskset), origin: $origin_note." $TOOLS
# shellcheck disable=SC2086
[ -z "$TLS_TOOLS" ] || table "TLS, closed loop, $CONNS connections (h2: $STREAMS streams each), ${DURATION}s, median of $REPEATS; load tool on CPU $TOOL_CPU, origin: $tls_note." $TLS_TOOLS
