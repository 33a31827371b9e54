#!/usr/bin/env bash
# bench.sh [loadgen run flags]: the main job behind `make bench`. Ensures the
# engine, images and stack; runs the matrix; builds the report; prints the
# path of report.md last. A stack it started it stops again (keeping the
# Prometheus volume); a stack that was already up is left up. Ctrl-C ends
# the current cell, keeps every finished one and still writes the report.
# -dist swarm (make bench DIST=swarm) runs on the Docker Swarm stack of
# scripts/swarm.sh instead: set up when none is, torn down again if this
# script set it up, the loadgen and its workers in the node's namespace.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
say() { printf 'bench: %s\n' "$*" >&2; }

args=("$@")
export CGO_ENABLED=0
go build -o .cache/dist/loadgen ./loadgen && go build -o .cache/dist/reporter ./reporter || exit 1
# What this script needs of the run it asks the loadgen, whose flag parser
# reads the flags (-f v, -f=v, --f v, --f=v) and the plan file as the run
# will and rejects a bad flag by name (exit 2). A default of this script's
# own goes before the given flags: a given one comes later and wins.
show() { .cache/dist/loadgen run -show "$1" "${args[@]}"; }
# Where the lab runs (-dist, else the plan file's dist key, else local), the
# results dir, the run id (generated now when none is given) and the plan file.
vals=$(show dist,results,run,plan) || exit 2
[ -n "$vals" ] || exit 0 # -h: the loadgen printed its flags
while IFS= read -r l; do
  case ${l%%=*} in
    dist) dist=${l#*=} ;;
    results) results=${l#*=} ;;
    run) run=${l#*=} ;;
    plan) planfile=${l#*=} ;;
  esac
done <<<"$vals"
args+=(-run "$run") # the run uses this id, not one of its own start

if [ "$dist" = swarm ]; then
  # A Swarm stack has no cpusets (docs/swarm.md, Parity): placement none,
  # with the quotas of auto that scripts/swarm.sh gives the proxies.
  args=(-placement none ${PLACEMENT:+-placement "$PLACEMENT"} "${args[@]}")
  placement=$(show placement) || exit 2
  [ "$placement" = none ] ||
    { say "DIST=swarm: a Swarm stack cannot pin CPUs, so PLACEMENT must be none (or unset), not $placement"; exit 2; }
  export PLACEMENT=none PLAN=$planfile
  started=0
  if scripts/swarm.sh status >/dev/null 2>&1; then
    say "swarm stack already up: using it and leaving it up"
  else
    started=1
    scripts/swarm.sh up || { scripts/swarm.sh down; exit 1; }
  fi
  cleanup() { [ "$started" = 1 ] && scripts/swarm.sh down; }
  eval "$(scripts/swarm.sh env)"
  args=(-metrics-addr "$SWARM_METRICS_HOST:9500" -prometheus-targets "$SWARM_TARGETS" "${args[@]}")
  prom=${PROM:-$SWARM_PROM} lock=.cache/stack.lock in_lab=(scripts/swarm.sh exec)
else
  # The stack and the loadgen follow one CPU placement (docs/placement.md):
  # -placement, else PLACEMENT, else the plan file's section, else auto.
  args=(${PLACEMENT:+-placement "$PLACEMENT"} "${args[@]}")
  placement=$(show placement) || exit 2
  # A plan file's own cpusets (custom): scripts/stack.sh reads them from PLAN.
  [ "$placement" != custom ] || placement=
  export PLACEMENT=$placement PLAN=$planfile

  ENGINE_COMPOSE=skip scripts/engine.sh || exit 1 # stack.sh up ensures compose
  # The loadgen's /metrics binds where Prometheus can reach it and no wider:
  # loopback on the host network, LISTEN when the lab is exposed, and the
  # docker bridge's gateway (host.docker.internal to Prometheus) on the bridge;
  # a -metrics-addr given wins.
  maddr=${LISTEN:-127.0.0.1}:9500
  if [ "${HOSTNET:-1}" != 1 ] && [ "${LISTEN:-127.0.0.1}" = 127.0.0.1 ]; then
    gw=$(scripts/compose.sh --gateway)
    maddr=${gw:-127.0.0.1}:9500
  fi
  args=(-metrics-addr "$maddr" "${args[@]}")
  started=0
  if scripts/stack.sh running; then
    # up again: compose recreates only the containers whose placement changed.
    say "stack already up: using it (with this run's placement) and leaving it up"
    scripts/stack.sh up || exit 1
  else
    started=1
    scripts/stack.sh up || { scripts/stack.sh stop; exit 1; }
  fi
  cleanup() { [ "$started" = 1 ] && scripts/stack.sh stop; }
  prom=${PROM:-http://127.0.0.1:9090} lock=.cache/stack.lock in_lab=()
  # The live view reads the Prometheus the report is built from (a
  # -prometheus given to this script comes later and wins).
  args=(-prometheus "$prom" "${args[@]}")
fi
trap cleanup EXIT
# Ctrl-C reaches the loadgen too (same process group); it ends the cell and
# returns. This shell must survive it to write the report and clean up.
trap 'say "interrupted: finishing the report of what was measured"' INT TERM

# One load on the stack at a time (scripts/e2e.sh and tests take it too).
mkdir -p .cache
flock -n "$lock" true || say "waiting for another run on the stack to finish ($lock)"
flock "$lock" "${in_lab[@]}" .cache/dist/loadgen run "${args[@]}"
lrc=$?
.cache/dist/reporter build -prom "$prom" -run "$run" -results "$results"
rrc=$?
if [ -f "$results/$run/report.md" ]; then
  echo "report: $results/$run/report.md"
else
  say "no report was written for run $run (loadgen exit $lrc, reporter exit $rrc)"
fi
[ "$lrc" -ne 0 ] && exit "$lrc"
exit "$rrc"
