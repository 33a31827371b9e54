# swarm-clean.sh: the cleanup of scripts/swarm.sh (sourced by it, in its
# shell: node() has set the current node's NS, RUN, DATA, STATE and the
# rest): what a node's daemon left, running or not, and every node's.
# shellcheck shell=bash disable=SC2154

# our_pids lists the processes the daemon of the current node left: those
# in its containers' cgroup, the daemon (by its name) and its containerd and
# shims (their command lines name $RUN).
# Two greps read every process's name and command line (a loop over /proc
# with a process per pid took seconds); the pattern comes from a file, so
# that the grep's own command line does not name $RUN.
our_pids() {
  {
    cat /sys/fs/cgroup/*/"$NODE_CGROUP"/cgroup.procs /sys/fs/cgroup/*/"$NODE_CGROUP"/*/cgroup.procs 2>/dev/null || true
    grep -lsxF "$DAEMON_NAME" /proc/[0-9]*/comm 2>/dev/null || true
    grep -lsFf <(printf '%s/\n' "$RUN") /proc/[0-9]*/cmdline 2>/dev/null || true
  } | sed 's|^/proc/\([0-9]*\)/.*|\1|' | grep -vx "$$" | sort -u || true
}

# cleanup removes whatever the current node's daemon left, running or not:
# the processes in its cgroup (containers), its containerd and shims (by
# their addresses under $RUN), every mount under $DATA and $RUN, both
# directories, and its namespace (with its veth pair). Every pid is one of
# ours.
cleanup() {
  local pid pids mp
  if pid=$(daemon_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  for _ in 1 2 3; do
    pids=$(our_pids)
    [ -z "$pids" ] && break
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
  # Deepest first; a busy one is detached (lazy) rather than left mounted.
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
  done < <(awk -v d="$DATA/" -v r="$RUN/" 'index($5"/", d) == 1 || index($5"/", r) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  for cg in /sys/fs/cgroup/*/"$NODE_CGROUP"; do
    [ -d "$cg" ] || continue
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$RUN" "$STATE/bin" "$STATE/daemon.json" "$STATE"/stack.*
  if [ -n "${SWARM_PURGE:-}" ]; then
    rm -rf "$DATA"
  else
    # The image store stays (image/ and overlay2/: the next up copies no
    # image it holds); the rest of the data-root goes.
    find "$DATA" -mindepth 1 -maxdepth 1 ! -name image ! -name overlay2 -exec rm -rf {} + 2>/dev/null || true
  fi
  ip netns del "$NS" 2>/dev/null || true
}

# cleanup_all: every node's leftovers, the last node first, then the LAN
# and the host's end of it.
cleanup_all() {
  local k
  for k in $(seq "$MAX_NODES" -1 1); do node "$k"; cleanup; done
  node 1
  ip netns del "$LAN_NS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip route del unreachable "$GUARD" 2>/dev/null || true
}
