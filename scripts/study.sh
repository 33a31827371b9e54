#!/usr/bin/env bash
# study.sh NAME [SCALE]: the job behind `make study STUDY=NAME`. NAME is one
# of the validity lab's studies (netstack, cc, scaleout, ceiling) or all;
# SCALE is full (the default) or tiny. Ensures what the study needs (the
# engine and images; Debian's iperf3 and nginx on the host; the stack for
# the ceiling study's knee search), runs `loadgen study`, then `reporter
# study`, and prints the path of each report.md. Every sample is kept when a
# study fails or is interrupted: the report covers what was measured.
#   RUN       study run id (default <name>-<UTC time>; with all, <RUN>-<name>)
#   RESULTS   results directory (default results)
#   REPEATS   samples per variant and condition (default: the study's own)
#   PLACEMENT auto (default) or none
set -uo pipefail
cd "$(dirname "$0")/.."
say() { printf 'study: %s\n' "$*" >&2; }
source scripts/jobs.sh
source scripts/hostpkgs.sh

name=${1:-}
scale=${2:-full}
studies=(netstack cc scaleout ceiling)
case $name in
  all) list=("${studies[@]}") ;;
  netstack | cc | scaleout | ceiling) list=("$name") ;;
  *) say "STUDY=${name:-<empty>}: choose one of ${studies[*]} or all (make study STUDY=netstack)"; exit 2 ;;
esac
case $scale in full | tiny) ;; *) say "SCALE=$scale: use full or tiny"; exit 2 ;; esac
results=${RESULTS:-results}

ENGINE_COMPOSE=skip scripts/engine.sh || exit 1
scripts/images.sh >/dev/null || exit 1
for s in "${list[@]}"; do study_needs "$s" || exit 1; done
export CGO_ENABLED=0
go build -o .cache/dist/loadgen ./loadgen && go build -o .cache/dist/reporter ./reporter || exit 1

started=0
cleanup() { [ $started = 1 ] && scripts/stack.sh stop; }
trap cleanup EXIT
trap 'say "interrupted: writing the report of what was measured"' INT TERM
mkdir -p .cache
rc=0
for s in "${list[@]}"; do
  run=${RUN:-}
  if [ -z "$run" ]; then run=$s-$(date -u +%Y%m%dT%H%M%SZ); elif [ ${#list[@]} -gt 1 ]; then run=$run-$s; fi
  if [ "$s" = ceiling ] && ! scripts/stack.sh running; then
    started=1
    scripts/stack.sh up || exit 1
  fi
  flock -n .cache/stack.lock true || say "waiting for another run on the stack to finish (.cache/stack.lock)"
  t0=$SECONDS
  flock .cache/stack.lock .cache/dist/loadgen study -study "$s" -scale "$scale" -run "$run" -results "$results" \
    ${REPEATS:+-repeats "$REPEATS"} ${PLACEMENT:+-placement "$PLACEMENT"} -repo "$PWD" >/dev/null
  lrc=$?
  say "$s: measured in $((SECONDS - t0)) s (loadgen exit $lrc)"
  if [ -f "$results/$run/study.json" ]; then
    .cache/dist/reporter study -run "$run" -results "$results" >/dev/null
    rrc=$?
    [ -f "$results/$run/report.md" ] && echo "report: $results/$run/report.md"
  else
    rrc=1
    say "$s: no study record was written (loadgen exit $lrc)"
  fi
  [ $lrc -ne 0 ] && rc=$lrc
  [ $rc -eq 0 ] && [ $rrc -ne 0 ] && rc=$rrc
  [ $lrc -eq 130 ] && break
done
exit $rc
