#!/usr/bin/env bash
# arms.sh [loadgen run flags]: `make duet` and `make observer`. Runs the
# bench (scripts/bench.sh) with the given arm flags, then compares each arm
# with the plan's own cells of the same run, repeat by repeat
# (reporter diff -run), and exits with the comparison's code: 4 when a duet's
# candidate regressed beyond the run's noise floor or one of its cells is
# missing, failed or newly invalid. The bench's own code (a cell over its
# SLO, which a worse candidate is expected to be) does not decide it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# An arms run's id unless -run is given (a given one comes later and wins).
args=(-run "arms-$(date -u +%Y%m%dT%H%M%SZ)" "$@")
# The results dir and the run id as the loadgen's flag parser reads them
# (-f v, -f=v, --f v, --f=v, the plan file); a bad flag is named (exit 2).
export CGO_ENABLED=0
go build -o .cache/dist/loadgen ./loadgen || exit 1
show() { .cache/dist/loadgen run -show "$1" "${args[@]}"; }
results=$(show results) && run=$(show run) || exit 2
[ -n "$run" ] || exit 0 # -h: the loadgen printed its flags
scripts/bench.sh "${args[@]}"
brc=$?
[ -f "$results/$run/report.json" ] || { echo "arms: no report for run $run (bench exit $brc)" >&2; exit 1; }
.cache/dist/reporter diff -run "$run" -results "$results" -json "$results/$run/arms.json" | tee "$results/$run/arms.md"
rc=${PIPESTATUS[0]}
echo "arms: bench exit $brc; comparison exit $rc: $results/$run/arms.md, $results/$run/arms.json" >&2
exit "$rc"
