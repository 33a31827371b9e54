# jobs.sh (sourced, not run): background jobs for the scripts that overlap
# independent builds (scripts/prepare.sh, scripts/images.sh), and the one
# lock every apt-get of the project takes when it may run next to another.
#
#   job_start NAME CMD...  runs CMD in its own process group, stdin from
#                          /dev/null, stdout into $JOB_LOGS/NAME.out and
#                          stderr into $JOB_LOGS/NAME.log (nothing reaches
#                          the terminal while jobs run side by side)
#   job_wait NAME          waits for it; on failure prints its exit status
#                          and the end of its log to stderr, returns non-zero
#   job_out NAME           its stdout (after job_wait)
#   apt_locked CMD...      runs CMD (an apt-get) holding the project's apt lock
#
# JOB_LOGS defaults to .cache/logs/<script name>; the logs stay after the run.
# A script that exits with jobs still running (an error, ^C) stops them.
JOB_LOGS=${JOB_LOGS:-$PWD/.cache/logs/$(basename "$0" .sh)}
declare -A JOB_PID=()

job_start() {
  local name=$1; shift
  mkdir -p "$JOB_LOGS"
  setsid "$@" </dev/null >"$JOB_LOGS/$name.out" 2>"$JOB_LOGS/$name.log" &
  JOB_PID[$name]=$!
}

job_wait() {
  local name=$1 rc=0
  wait "${JOB_PID[$name]}" || rc=$?
  unset "JOB_PID[$name]"
  if [ "$rc" -ne 0 ]; then
    printf '%s: %s failed (exit %d); the end of %s:\n' "$(basename "$0" .sh)" "$name" "$rc" "$JOB_LOGS/$name.log" >&2
    tail -n 30 "$JOB_LOGS/$name.log" | sed 's/^/  | /' >&2
  fi
  return "$rc"
}

job_out() { cat "$JOB_LOGS/$1.out"; }

job_stop_all() {
  local name running=()
  for name in "${!JOB_PID[@]}"; do
    kill -0 "${JOB_PID[$name]}" 2>/dev/null && running+=("$name")
    kill -- "-${JOB_PID[$name]}" 2>/dev/null || true
    wait "${JOB_PID[$name]}" 2>/dev/null || true
  done
  [ "${#running[@]}" -eq 0 ] ||
    printf '%s: stopped unfinished jobs: %s (logs in %s)\n' "$(basename "$0" .sh)" "${running[*]}" "$JOB_LOGS" >&2
}
trap job_stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

source "$(dirname "${BASH_SOURCE[0]}")/aptlock.sh"
