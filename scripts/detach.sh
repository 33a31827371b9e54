# detach.sh (sourced, not run): starting a daemon, or a job another
# command collects, that outlives its caller.
#
#   detach LOG CMD...  runs CMD in the background in a session of its own
#                      (setsid, nohup), stdin from /dev/null, stdout and
#                      stderr appended to LOG, keeping no descriptor of its
#                      caller beyond those: an inherited lock (the e2e
#                      run's .cache/stack.lock) would otherwise be held for
#                      as long as the daemon lives
detach() {
  local log=$1; shift
  (
    for fd in /proc/self/fd/*; do
      n=${fd##*/}
      [ "$n" -gt 2 ] && eval "exec $n>&-" 2>/dev/null
    done
    exec setsid nohup "$@" >>"$log" 2>&1 </dev/null
  ) &
}

#   detach_job DIR NAME CMD...  CMD detached as above, its output in
#                      DIR/NAME.log (a new one), its exit status written to
#                      DIR/NAME.rc when it ends: for a job that one command
#                      starts and another collects (make test's swarm and
#                      stack starts and stops)
#   job_status DIR NAME SECONDS  waits up to SECONDS for it: its exit
#                      status, its log on stderr when it failed; 124 when it
#                      has not ended by then
detach_job() {
  local dir=$1 name=$2
  shift 2
  mkdir -p "$dir"
  rm -f "$dir/$name.rc" "$dir/$name.log"
  detach "$dir/$name.log" bash -c '"$@"; echo $? >"$0.tmp"; mv "$0.tmp" "$0"' "$dir/$name.rc" "$@"
}

job_status() {
  local dir=$1 name=$2 deadline=$((SECONDS + $3)) rc
  until [ -f "$dir/$name.rc" ]; do
    if [ $SECONDS -ge $deadline ]; then
      printf '%s has not ended (log: %s)\n' "$name" "$dir/$name.log" >&2
      return 124
    fi
    sleep 0.5
  done
  rc=$(cat "$dir/$name.rc")
  if [ "$rc" != 0 ]; then
    printf '%s failed (exit %s):\n' "$name" "$rc" >&2
    cat "$dir/$name.log" >&2
  fi
  return "$rc"
}
