# detach.sh (sourced, not run): starting a daemon that outlives its caller.
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
