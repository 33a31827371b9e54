#!/usr/bin/env bash
# fuzz.sh: the fuzzing pass of `make fuzz` (and so of `make test`). It owns
# finding every fuzz target of the repository (each `func FuzzXxx` of a test
# file, so a new one is picked up with no edit here) and fuzzing
# them, `go test -run '^$' -fuzz '^Name$' -fuzztime=<share>`, each for a
# share of one total budget: as many as start within it, from an offset
# that rotates with the commit, so that the pass stays near its budget on
# 2 cores and successive passes cover every target. Two targets run at a time with one fuzzing worker
# each: one target's go command, link and start-up (about 1.5 s, longer
# than a short fuzz) then overlap the other's fuzzing. Before each target
# the share is recomputed from the time left and the start-up cost measured
# so far. One line per target as it ends; the first failure stops the pass
# (the other running target is ended) with go test's output and where the
# failing input was written, <package>/testdata/fuzz/<Name>/<hash>: keep
# that file, it is the regression seed of the fix.
#
#   FUZZ_BUDGET=30       seconds for the whole pass, discovery included:
#                        no target starts after it (the rest wait for a
#                        later pass, which starts elsewhere)
#   FUZZ_OFFSET=<n>      the target to start from (default: from the commit)
#   FUZZTIME=3s          a fixed -fuzztime per target instead of the share
#   FUZZ_JOBS=2          targets fuzzed at once
#   FUZZ_PARALLEL=1      fuzzing workers per target (-parallel)
#   FUZZ_MINIMIZE=1s     -fuzzminimizetime: kept short, or minimising new
#                        inputs eats a short target's whole time
#   FUZZ_PACKAGES=./...  where to look for targets
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-buildvcs=false GOWORK=off

budget=${FUZZ_BUDGET:-30}
jobs=${FUZZ_JOBS:-2}
parallel=${FUZZ_PARALLEL:-1}
minimize=${FUZZ_MINIMIZE:-1s}
packages=${FUZZ_PACKAGES:-./...}
min_ms=1000 # no target fuzzes for less, whatever the budget says

now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((10#$t / 1000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); } # ms as 12.3
start=$(now_ms)
deadline=$((start + budget * 1000))

module=$(go list -m)
# Every func FuzzXxx of a _test.go file without build constraints, found
# by grep: `go test -list` would link every test binary first (about 25 s
# of a 30 s budget, warm).
roots=()
for p in $packages; do roots+=("${p%/...}"); done
targets=()
while IFS=: read -r file line; do
  head -n 5 "$file" | grep -q '^//go:build' && continue # needs tags
  name=${line#func }
  name=${name%%(*}
  dir=$(dirname "$file")
  dir=${dir#./}
  pkg=$module
  [ "$dir" = . ] || pkg=$module/$dir
  targets+=("$pkg $name")
done < <(grep -rH --include='*_test.go' --exclude-dir=.cache --exclude-dir=testdata --exclude-dir=node_modules '^func Fuzz' "${roots[@]}" | sort)
total=${#targets[@]}
if [ "$total" -gt 0 ] && [ -z "${FUZZTIME:-}" ]; then
  # Building each target's instrumented test binary takes seconds, more
  # than a short fuzz: the pass starts targets while the budget lasts,
  # from an offset that rotates with the commit (FUZZ_OFFSET), so that
  # successive passes cover them all. Every target's seeds still run in
  # every `go test ./...`.
  offset=${FUZZ_OFFSET:-$(( 16#$(git rev-parse --short=6 HEAD 2>/dev/null || echo 0) % total ))}
  targets=("${targets[@]:offset}" "${targets[@]:0:offset}")
fi
if [ "$total" -eq 0 ]; then
  echo "fuzz: no fuzz target found in $packages" >&2
  exit 1
fi
if [ -n "${FUZZTIME:-}" ]; then
  echo "fuzz: $total targets, -fuzztime $FUZZTIME each, $jobs at a time, -parallel $parallel"
else
  echo "fuzz: $total targets in $budget s, $jobs at a time, -parallel $parallel"
fi

work=$(mktemp -d)
declare -A pid=() began=() fuzzed=() what=() # by slot
stop_all() {
  for s in "${!pid[@]}"; do kill -TERM -- "-${pid[$s]}" 2>/dev/null || true; done
  for s in "${!pid[@]}"; do wait "${pid[$s]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

overhead_ms=1500 # per target beyond -fuzztime; re-measured as targets end
spent_overhead=0 measured=0 next=0 done_count=0

launch() { # slot: start the next target in it
  local slot=$1 t=${targets[$next]} fuzztime
  local pkg=${t% *} name=${t#* }
  next=$((next + 1))
  if [ -n "${FUZZTIME:-}" ]; then
    fuzztime=$FUZZTIME
  else
    # The lanes' time left, over the targets still to start (this one
    # included) and those running in the other lanes.
    local ms=$(((deadline - $(now_ms)) * jobs / (total - next + jobs) - overhead_ms))
    if ((ms < min_ms)); then ms=$min_ms; fi
    fuzztime=${ms}ms
  fi
  rm -f "$work/$slot.rc"
  setsid bash -c 'go test -run "^\$" -fuzz "^$1\$" -fuzztime="$2" -fuzzminimizetime="$3" -parallel "$4" "$5" >"$6.log" 2>&1; echo $? >"$6.rc.tmp"; mv "$6.rc.tmp" "$6.rc"' \
    fuzz "$name" "$fuzztime" "$minimize" "$parallel" "$pkg" "$work/$slot" &
  pid[$slot]=$!
  began[$slot]=$(now_ms)
  fuzzed[$slot]=$fuzztime
  what[$slot]="$pkg $name"
}

finish() { # slot: report the target that ended in it; exit on failure
  local slot=$1 rc wall execs input note
  local pkg=${what[$slot]% *} name=${what[$slot]#* } log=$work/$slot.log
  rc=$(cat "$work/$slot.rc")
  wait "${pid[$slot]}" 2>/dev/null || true
  unset "pid[$slot]"
  wall=$(($(now_ms) - began[$slot]))
  done_count=$((done_count + 1))
  if [ -z "${FUZZTIME:-}" ]; then
    spent_overhead=$((spent_overhead + wall - ${fuzzed[$slot]%ms}))
    measured=$((measured + 1))
    overhead_ms=$((spent_overhead / measured))
    if ((overhead_ms < 300)); then overhead_ms=300; fi
  fi
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | awk '{print $2}' || true)
  note=
  # Go 1.26's coordinator can report its own -fuzztime deadline as the
  # target's failure when a worker is mid-call as it passes (go.dev/issue/75804,
  # fixed in Go 1.27): "--- FAIL: Name (...)" followed by the bare line
  # "context deadline exceeded", no failing input written, no other failure.
  # That is the end of the time, not a finding; anything else still fails.
  if [ "$rc" -ne 0 ] && [ "$(grep -c -- '^--- FAIL: ' "$log")" -eq 1 ] && ! grep -q 'Failing input written' "$log" &&
    grep -A1 -- "^--- FAIL: $name (" "$log" | tail -1 | grep -qx '    context deadline exceeded'; then
    rc=0 note=" (go.dev/issue/75804: the deadline reported as a failure; no failing input)"
  fi
  if [ "$rc" -eq 0 ]; then
    printf 'ok    %-38s %-30s %7s fuzzing, %5ss wall, %s execs%s\n' "${pkg#"$module"/}" "$name" "${fuzzed[$slot]}" "$(secs "$wall")" "${execs:-?}" "$note"
    return
  fi
  printf 'FAIL  %-38s %s\n' "${pkg#"$module"/}" "$name"
  cat "$log"
  local dir=${pkg#"$module"}
  dir=.${dir:-/}
  input=$(grep -o 'Failing input written to [^ ]*' "$log" | tail -1 | awk '{print $5}' || true)
  if [ -n "$input" ]; then
    echo "fuzz: $name failed; the failing input is ${dir%/}/$input"
    echo "fuzz: reproduce: go test -run '$name/$(basename "$input")' $pkg   (keep the file: it is the seed that guards the fix)"
  else
    echo "fuzz: $name failed without a new failing input: a seed (f.Add, or ${dir%/}/testdata/fuzz/$name/) fails, or the package does not build"
  fi
  exit 1
}

while ((done_count < next || next < total)); do
  for ((s = 0; s < jobs; s++)); do
    if [ -n "${pid[$s]:-}" ] && [ -e "$work/$s.rc" ]; then finish "$s"; fi
    if [ -z "${pid[$s]:-}" ] && ((next < total)); then
      if [ -z "${FUZZTIME:-}" ] && (($(now_ms) >= deadline)); then
        total=$next # the budget is spent: the rest wait for the next pass
        continue
      fi
      launch "$s"
    fi
  done
  sleep 0.05
done
left=$((${#targets[@]} - total))
if ((left > 0)); then
  echo "fuzz: $total targets passed in $(secs $(($(now_ms) - start)))s; $left left for a later pass (the budget was spent; FUZZ_OFFSET=$(((offset + total) % ${#targets[@]})) starts there)"
else
  echo "fuzz: $total targets passed in $(secs $(($(now_ms) - start)))s"
fi
