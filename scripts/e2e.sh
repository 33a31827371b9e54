#!/usr/bin/env bash
# e2e.sh: the end-to-end part of `make test`, on the real engine and stack:
# the Swarm tests on the single-node swarm (scripts/swarm.sh), then the
# stack up (host networking, offline images when there is no registry),
# preflight of all 16 routes, a quick bench (the four proxies in front of
# fast; the other origins' cells run in the e2e tests) with assertions on
# report.json,
# every dashboard and rule query against the live Prometheus, the exporter's
# checks against docker logs and docker stats, then the stack down, leaving
# no container behind even when a step fails. A stack that was already up
# (a developer's) is used and left up, like make bench does.
#   e2e.sh swarm   the Swarm tests alone, on a swarm of SWARM_NODES nodes
#                  (make test-swarm: 2 nodes unless given; make test runs
#                  them beside lint and fuzzing)
#   e2e.sh stack   everything but the Swarm tests (make test, after them)
#   e2e.sh stack-start  the compose stack up in the background, unless it
#                  runs already, marked as this script's to take down (make
#                  test: beside lint, fuzzing and the Swarm tests; beside the
#                  unit tests it slowed them by more than it saved)
#   e2e.sh stack-purge  the stack down if stack-start brought it up (make
#                  test, when a step before e2e.sh stack failed)
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'e2e: %s\n' "$*" >&2; }
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# The stack and every loadgen run below use the default CPU placement (auto).
unset PLACEMENT PLAN
t0=$SECONDS
# The mark of a stack that make test brought up (e2e.sh stack-start): this
# script takes it down at the end, as one it brought up itself. The start
# is a detached job (scripts/detach.sh) in .cache/logs/e2e.
ours=.cache/e2e-stack-ours
source scripts/detach.sh

# wait_start: the stack-start's up has ended (at most 5 min): its status.
wait_start() {
  [ -e "$ours" ] || return 0
  job_status .cache/logs/e2e stack-start 300
}

# gotest NAME ARGS...: go test -tags e2e -v ARGS, its whole log in
# .cache/logs/e2e/NAME.log; prints each top-level test's verdict and time
# (the budget of make test is tight) and a failing test's own output.
gotest() {
  local name=$1 log rc t
  shift
  log=.cache/logs/e2e/$name.log
  mkdir -p .cache/logs/e2e
  set +e
  go test -tags e2e -count=1 -vet=off -v "$@" >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' "$log" || true
  if [ $rc -ne 0 ]; then
    for t in $(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$log"); do
      say "output of $t:"
      sed -n "/^=== RUN   $t\$/,/^--- FAIL: $t /p" "$log"
    done
    grep -q '^--- FAIL' "$log" || tail -n 60 "$log"
  fi
  return $rc
}

case ${1:-} in
  stack-start)
    rm -f "$ours"
    scripts/stack.sh running && exit 0
    mkdir -p .cache && touch "$ours"
    detach_job .cache/logs/e2e stack-start scripts/stack.sh up
    say "stack up started in the background (log: .cache/logs/e2e/stack-start.log)"
    exit 0 ;;
  stack-purge)
    [ -e "$ours" ] || exit 0
    wait_start || true
    scripts/stack.sh purge
    rm -f "$ours"
    exit 0 ;;
esac

scripts/engine.sh
go build -o .cache/dist/loadgen ./loadgen
go build -o .cache/dist/reporter ./reporter
# One load on the stack at a time: anything else sending load to the stack
# takes the same lock (flock .cache/stack.lock ...); the Swarm tests share
# the workers' Prometheus targets file with it.
mkdir -p .cache
exec 9>.cache/stack.lock
flock 9
export PROXYBENCH_STACK_LOCKED=1 # tests below must not wait for it themselves

# The lab on Docker Swarm first, before the compose stack is up: a single
# node on the project's second daemon (make test brings it up in the
# background beside the unit tests; alone, this script does). It goes
# down again beside the compose stack's start (e2e.sh swarm: before it
# returns), unless it was up before.
if [ "${1:-}" != stack ]; then
  rc=0
  swarm_state=$(scripts/swarm.sh wait) || rc=$?
  if [ $rc = 3 ]; then
    if scripts/swarm.sh status >/dev/null 2>&1; then
      swarm_state=up-already
    else
      swarm_state=started
      scripts/swarm.sh up || { scripts/swarm.sh down; exit 1; }
    fi
  elif [ $rc != 0 ]; then
    scripts/swarm.sh down
    exit $rc
  fi
  say "swarm stack up after $((SECONDS - t0)) s"
  rc=0
  PROXYBENCH_SWARM=1 gotest swarm -timeout 5m -run '^TestSwarm' ./e2e/ || rc=$?
  if [ "$swarm_state" = started ]; then
    scripts/swarm.sh stop # detached: it holds no descriptor of this script's, the stack's lock among them
  fi
  if [ $rc != 0 ]; then
    scripts/swarm.sh wait-down || true
    exit $rc
  fi
  if [ "${1:-}" = swarm ]; then
    # make test (SWARM_DOWN_LATER=1) lets the swarm go down beside the
    # compose stack's first steps: e2e.sh stack waits for it before the
    # quick bench.
    [ -n "${SWARM_DOWN_LATER:-}" ] || scripts/swarm.sh wait-down
    say "swarm tests passed in $((SECONDS - t0)) s"
    exit 0
  fi
fi

if [ -e "$ours" ]; then
  trap 'rc=$?; scripts/stack.sh purge; rm -f "$ours"; left=$(docker ps -aq --filter label=com.docker.compose.project=proxybench); [ -z "$left" ] || { say "containers left behind: $left"; rc=1; }; exit $rc' EXIT
  wait_start
  scripts/stack.sh wait
elif scripts/stack.sh running; then
  say "stack already up: using it and leaving it up"
  scripts/stack.sh up
else
  trap 'rc=$?; scripts/stack.sh purge; rm -f "$ours"; left=$(docker ps -aq --filter label=com.docker.compose.project=proxybench); [ -z "$left" ] || { say "containers left behind: $left"; rc=1; }; exit $rc' EXIT
  scripts/stack.sh up
fi
say "stack up after $((SECONDS - t0)) s"
# Docker runs each container's first health check one interval (15-26 s,
# one per service) after it starts, and a container's start-up work
# (its first GC, a first scrape) falls in the same half minute: measure
# after it: wait until docker has seen every container of the stack
# healthy (at most 30 s; make test brings the stack up beside lint and
# the Swarm tests, so that it is mostly past this by then).
for _ in $(seq 60); do
  [ -z "$(docker ps -q --filter label=com.docker.compose.project=proxybench --filter health=starting)" ] && break
  sleep 0.5
done
say "stack healthy by docker's own checks after $((SECONDS - t0)) s"
# The swarm's down, when this script or make test's swarm part started it
# (its last line says so).
scripts/swarm.sh wait-down

# The studies' end-to-end tests run iperf3 and a host nginx.
source scripts/hostpkgs.sh
study_needs cc
study_needs netstack
.cache/dist/loadgen preflight -proxies nginx,haproxy,traefik,caddy -origins node,python,go,fast -wait 60s

run=e2e-$(date -u +%Y%m%dT%H%M%SZ)
results=$PWD/.cache/e2e-results
.cache/dist/loadgen run -run "$run" -results "$results" -tier 3s \
  -proxies nginx,haproxy,traefik,caddy -origins fast -concurrency 20 -settle 1500ms
.cache/dist/reporter build -prom http://127.0.0.1:9090 -run "$run" -results "$results"
# The open-loop panels and rules get their data from the open-loop cells of
# the end-to-end tests below, inside the live check's 15 min window.
say "bench + report after $((SECONDS - t0)) s"

export PROXYBENCH_RUN_DIR=$results/$run PROXYBENCH_PROM=http://127.0.0.1:9090
# One package at a time, each alone on the stack: a rate limiter's
# precision, a slow origin's latency, a CPU reading all need the CPUs they
# are given (the scenarios beside lint and fuzzing, and the exporter's CPU
# check beside them, failed).
gotest go-test -timeout 15m -skip '^TestSwarm' ./e2e/
gotest scenarios -timeout 10m ./e2e/scenarios
go test -tags e2e -count=1 -timeout 5m -run TestLiveQueriesReturnData ./grafana/dashcheck
# The exporter against docker logs and docker stats on the real stack. Its
# idle-CPU figure is a measurement, not a pass/fail test (make perf-exporter).
gotest exporter -timeout 10m -skip TestE2EIdleCPU ./exporter/
say "passed in $((SECONDS - t0)) s"
