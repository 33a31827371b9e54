#!/usr/bin/env bash
# swarm.sh up|down|status: the lab's proxies, origins, exporter and
# Prometheus as a Docker Swarm stack (docs/swarm.md), on a second Docker
# daemon the project runs itself. The shared engine (scripts/engine.sh) keeps
# live-restore, which swarm mode refuses, and is only read from: the stack's
# images are copied out of it.
#   up      the daemon (no live-restore; its data-root in .cache/swarm, its
#           socket and exec-root in /run/proxybench-swarm, its containers
#           under the cgroup /proxybench-swarm) in a network namespace of
#           its own joined to the host by a veth pair (198.18.0.1 on the
#           host, 198.18.0.2 the node's: RFC 2544's benchmarking range; the
#           namespace has no other route, and the host a route making the
#           rest of 198.18.0.0/15 unreachable); a single-node swarm advertised on
#           198.18.0.2 whose node takes every role label; the images it
#           lacks (docker save | docker load); the stack deployed from
#           compose/docker-compose.yml (+ docker-compose.swarm.yml, through
#           `docker compose config` and `loadgen swarmstack`); waits until
#           every service runs n/n and every route answers from inside the
#           namespace (loadgen preflight). Idempotent.
#   down    everything up made: the stack and the swarm go with the daemon;
#           its containerd, leftover containers (by their cgroup), mounts,
#           the namespace, the veth pair and the host's route, and the
#           data-root's contents
#           (the daemon's log stays, in .cache/swarm/dockerd.log).
#           After a crash at any point it removes what is left, and up
#           starts by doing the same when its daemon is gone.
#   status  what exists and answers; exit 0 when the stack runs n/n
#   start   up in the background, unless the stack already runs; wait
#           collects its exit status (and says whether it brought it up)
#   exec CMD...  CMD in the node's network namespace, DOCKER_HOST its daemon
#   env     the swarm's addresses as shell assignments (SWARM_PROM, ...)
# SWARM_WAIT (default 180) bounds how many seconds up waits for the services.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'swarm: %s\n' "$*" >&2; }
T0=$EPOCHREALTIME
# step NAME: the time since the script started, then what comes next.
step() { say "$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%6.1f s", b - a}'): $*"; }

NS=pbswarm                 # network namespace
HOST_IF=pbswarm0           # veth end on the host
NS_IF=pbswarm1             # veth end in the namespace
HOST_ADDR=198.18.0.1
NODE_ADDR=198.18.0.2       # the node's address: swarm advertise, data path, published ports
LINK_PREFIX=30
GUARD=198.18.0.0/15        # the whole range: unreachable from the host but through the veth
BIP=198.18.1.1/24          # the daemon's docker0, inside the namespace
LOCAL_POOL=198.18.64.0/18  # its local networks (docker_gwbridge)
OVERLAY_POOL=198.19.0.0/16 # the swarm's overlay networks, /24 each
RUN=/run/proxybench-swarm  # exec-root, pidfile, socket
SOCK_DIR=$RUN/sock         # the socket alone: the docker filter mounts this directory
SOCK=$SOCK_DIR/docker.sock
STATE=$PWD/.cache/swarm    # data-root, daemon.json, the stack file, the log
DATA=$STATE/data
CGROUP=proxybench-swarm
STACK=proxybench
# The daemon runs as pbswarm-dockerd (a symlink), so that engine.sh's
# `pgrep -x dockerd` and `pkill -HUP -x dockerd` only ever see the shared one.
DAEMON_NAME=pbswarm-dockerd

dk() { docker --host "unix://$SOCK" "$@"; }
answers() { [ -S "$SOCK" ] && dk info >/dev/null 2>&1; }
daemon_pid() {
  local pid
  pid=$(cat "$RUN/dockerd.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$DAEMON_NAME" ] && echo "$pid"
}

# our_pids lists the processes a daemon of this script left: those in its
# containers' cgroup, the daemon (by its name) and its containerd and shims
# (their command lines name $RUN).
our_pids() {
  local p
  {
    cat /sys/fs/cgroup/*/"$CGROUP"/cgroup.procs /sys/fs/cgroup/*/"$CGROUP"/*/cgroup.procs 2>/dev/null || true
    for p in /proc/[0-9]*; do
      if [ "$(cat "$p/comm" 2>/dev/null)" = "$DAEMON_NAME" ] || grep -qsF "$RUN/" "$p/cmdline"; then
        echo "${p#/proc/}"
      fi
    done
  } | grep -vx "$$" | sort -u || true
}

# cleanup removes whatever a daemon of this script left, running or not:
# the processes in its cgroup (containers), its containerd and shims (by
# their addresses under $RUN), every mount under $DATA and $RUN, both
# directories, the namespace and the veth pair. Every pid is one of ours.
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
  for cg in /sys/fs/cgroup/*/"$CGROUP"; do
    [ -d "$cg" ] || continue
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$RUN" "$DATA" "$STATE/bin" "$STATE/daemon.json" "$STATE"/stack.*
  ip netns del "$NS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip route del unreachable "$GUARD" 2>/dev/null || true
}

netns_up() {
  if ip netns list | grep -qx "$NS\( .*\)\?" && ip -n "$NS" -br addr show dev "$NS_IF" 2>/dev/null | grep -q "$NODE_ADDR/" &&
    ip route show type unreachable | grep -q "^unreachable $GUARD"; then
    return 0
  fi
  ip netns del "$NS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns add "$NS"
  # Nothing for the benchmarking range leaves the host: without this, a
  # request to a node's address while its link is down would take the
  # default route.
  ip route replace unreachable "$GUARD"
  ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NS"
  ip addr add "$HOST_ADDR/$LINK_PREFIX" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$NODE_ADDR/$LINK_PREFIX" dev "$NS_IF"
  ip -n "$NS" link set "$NS_IF" up
}

daemon_up() {
  answers && return 0
  if pid=$(daemon_pid); then # starting: give it the time a start takes
    for _ in $(seq 1 60); do answers && return 0; kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  say "no daemon of ours answers: removing what an earlier one left"
  cleanup
  netns_up
  mkdir -p "$DATA" "$SOCK_DIR" "$STATE/bin"
  ln -sf "$(command -v dockerd)" "$STATE/bin/$DAEMON_NAME"
  # Its own config file: the shared engine's /etc/docker/daemon.json
  # (live-restore) is never read. Its own containerd (started by it, under
  # $RUN), its own iptables (those of the namespace).
  cat >"$STATE/daemon.json" <<EOF
{
  "data-root": "$DATA",
  "exec-root": "$RUN/exec",
  "pidfile": "$RUN/dockerd.pid",
  "hosts": ["unix://$SOCK"],
  "live-restore": false,
  "cgroup-parent": "/$CGROUP",
  "bip": "$BIP",
  "default-address-pools": [{"base": "$LOCAL_POOL", "size": 24}],
  "containerd-namespace": "$CGROUP",
  "containerd-plugins-namespace": "$CGROUP-plugins",
  "storage-driver": "overlay2",
  "ip6tables": false
}
EOF
  say "starting the swarm's dockerd in network namespace $NS (log: $STATE/dockerd.log)"
  source scripts/detach.sh
  # DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1: a task uses the node's image and
  # never asks a registry for it.
  detach "$STATE/dockerd.log" nsenter --net=/run/netns/"$NS" \
    env DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 PATH="/usr/sbin:/usr/bin:$PATH" \
    "$STATE/bin/$DAEMON_NAME" --config-file "$STATE/daemon.json"
  for _ in $(seq 1 120); do answers && return 0; sleep 0.5; done
  say "the swarm's dockerd did not answer within 60 s:"; tail -20 "$STATE/dockerd.log" >&2
  return 1
}

swarm_up() {
  if [ "$(dk info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
    dk swarm init --advertise-addr "$NODE_ADDR" --listen-addr "$NODE_ADDR:2377" --data-path-addr "$NODE_ADDR" \
      --default-addr-pool "$OVERLAY_POOL" --default-addr-pool-mask-length 24 >/dev/null
  fi
  local labels=() l out
  out=$(.cache/dist/loadgen swarmstack -node-labels) || { say "loadgen swarmstack -node-labels failed"; return 1; }
  for l in $out; do labels+=(--label-add "$l"); done
  dk node update "${labels[@]}" "$(dk info -f '{{.Swarm.NodeID}}')" >/dev/null
}

# compose_model prints the stack's compose model: the users' file (its own
# networks: HOSTNET=0) with the Swarm override, the services the lab runs,
# the variables `stack.sh up` sets (placement, TLS).
compose_model() {
  # shellcheck disable=SC2046
  PLACEMENT=none PLAN= HOSTNET=0 HOST_GATEWAY=host-gateway SWARM_ENGINE_RUN=$SOCK_DIR EXPORTER_CGROUP_PREFIXES=/$CGROUP/ \
    scripts/stack.sh compose -f compose/docker-compose.swarm.yml config "$@" $(scripts/stack.sh services)
}

images_up() {
  local img want have missing=()
  while read -r img; do
    want=$(docker image inspect -f '{{.Id}}' "$img")
    have=$(dk image inspect -f '{{.Id}}' "$img" 2>/dev/null) || true
    [ "$want" = "$have" ] || missing+=("$img")
  done < <(compose_model --images | sort -u)
  [ ${#missing[@]} -eq 0 ] && return 0
  say "copying ${#missing[@]} images from the shared engine: ${missing[*]}"
  docker save "${missing[@]}" | dk load -q >/dev/null
}

deploy() {
  if ! compose_model --format json | .cache/dist/loadgen swarmstack -project "$STACK" >"$STATE/stack.json" 2>"$STATE/stack.notes"; then
    cat "$STATE/stack.notes" >&2
    return 1
  fi
  say "the stack file ($STATE/stack.json) differs from the compose model in $(wc -l <"$STATE/stack.notes") ways ($STATE/stack.notes)"
  dk stack deploy --detach=true --prune --resolve-image never -c "$STATE/stack.json" "$STACK" >&2
}

# converged: every service of the stack runs all its replicas, and none is
# still being updated (a deploy over a running stack changes its services
# one task at a time: the old tasks count as running until replaced).
converged() {
  local lines ids
  lines=$(dk service ls --filter "label=com.docker.stack.namespace=$STACK" --format '{{.Replicas}}' 2>/dev/null) || return 1
  [ -n "$lines" ] && ! grep -qvE '^([1-9][0-9]*)/\1( |$)' <<<"$lines" || return 1
  ids=$(dk service ls -q --filter "label=com.docker.stack.namespace=$STACK") || return 1
  # shellcheck disable=SC2086
  ! dk service inspect -f '{{if .UpdateStatus}}{{.UpdateStatus.State}}{{end}}' $ids | grep -qE 'updating|rollback_started|paused'
}

wait_converged() {
  local deadline=$((SECONDS + ${SWARM_WAIT:-180}))
  until converged; do
    if [ $SECONDS -ge $deadline ]; then
      say "not converged after ${SWARM_WAIT:-180} s:"
      dk service ls --filter "label=com.docker.stack.namespace=$STACK" >&2
      dk stack ps --no-trunc --format '{{.Name}} {{.CurrentState}} {{.Error}}' "$STACK" | grep -v ' Running ' | head -20 >&2 || true
      return 1
    fi
    sleep 1
  done
}

# routes: every proxy x origin route, asked from inside the namespace on the
# node's published ports (127.0.0.1 there), as `make preflight` asks the
# compose stack.
routes() {
  nsenter --net=/run/netns/"$NS" .cache/dist/loadgen preflight -no-docker -wait "${1:-0s}"
}

case ${1:-} in
  up)
    [ "$(id -u)" = 0 ] || { say "needs root (a network namespace, a second dockerd)"; exit 2; }
    exec 9>/run/proxybench-swarm.lock
    flock 9
    scripts/engine.sh
    scripts/images.sh
    # The loadgen renders the stack file and checks the routes: built from
    # this checkout (a clean clone has none yet).
    CGO_ENABLED=0 go build -o .cache/dist/loadgen ./loadgen
    step "the daemon"
    daemon_up
    step "the swarm and its node's labels"
    swarm_up
    step "the images"
    images_up
    step "the stack"
    deploy
    step "waiting for every service to run n/n"
    wait_converged
    step "every route from inside the namespace"
    routes 30s >&2
    step "up: $(dk service ls --filter "label=com.docker.stack.namespace=$STACK" --format '{{.Name}} {{.Replicas}}' | tr '\n' ' ')" ;;
  down)
    [ "$(id -u)" = 0 ] || { say "needs root"; exit 2; }
    exec 9>/run/proxybench-swarm.lock
    flock 9
    if answers; then
      # Leaving the swarm removes the stack's tasks; the daemon then stops
      # the containers it still has.
      dk swarm leave --force >/dev/null 2>&1 || true
      step "left the swarm"
    fi
    cleanup
    step "down" ;;
  status)
    if ! answers; then
      say "no swarm daemon answers on $SOCK"
      ip netns list | grep -q "^$NS\b" && say "namespace $NS exists (swarm.sh down removes it)"
      exit 1
    fi
    say "daemon pid $(daemon_pid || echo ?), docker $(dk version -f '{{.Server.Version}}'), swarm $(dk info -f '{{.Swarm.LocalNodeState}}') on $NODE_ADDR"
    dk node ls --format '{{.Hostname}} {{.Status}} {{.Availability}} {{.ManagerStatus}}' >&2 2>/dev/null || true
    dk node inspect self -f '{{range $k, $v := .Spec.Labels}}{{$k}}={{$v}} {{end}}' >&2 2>/dev/null || true
    dk service ls --filter "label=com.docker.stack.namespace=$STACK" >&2 2>/dev/null || true
    converged ;;
  start)
    # up in the background (make test overlaps it with lint and fuzzing);
    # `wait` collects it. Nothing is started when the stack already runs.
    mkdir -p "$STATE"
    rm -f "$STATE/start.rc" "$STATE/start.state"
    if "$0" status >/dev/null 2>&1; then
      echo up-already >"$STATE/start.state"
      say "the stack already runs: nothing to start"
      exit 0
    fi
    echo started >"$STATE/start.state"
    setsid bash -c '"$0" up >"$1/start.log" 2>&1; echo $? >"$1/start.rc"' "$0" "$STATE" </dev/null >/dev/null 2>&1 &
    say "up started in the background (log: $STATE/start.log)" ;;
  wait)
    # wait for `start`'s up: its exit status; 3 when no start is pending.
    # Prints "started" or "up-already" (whether this start brought it up).
    [ -f "$STATE/start.state" ] || { say "no swarm.sh start is pending"; exit 3; }
    deadline=$((SECONDS + ${SWARM_WAIT:-180} + 120))
    until [ -f "$STATE/start.rc" ] || [ "$(cat "$STATE/start.state")" = up-already ]; do
      [ $SECONDS -lt $deadline ] || { say "swarm.sh up has not finished (log: $STATE/start.log)"; exit 1; }
      sleep 1
    done
    state=$(cat "$STATE/start.state")
    rm -f "$STATE/start.state"
    if [ "$state" = started ]; then
      rc=$(cat "$STATE/start.rc")
      if [ "$rc" != 0 ]; then
        say "swarm.sh up failed (exit $rc):"
        cat "$STATE/start.log" >&2
        exit "$rc"
      fi
      grep '^swarm: ' "$STATE/start.log" | tail -1 >&2 || true
    fi
    echo "$state" ;;
  exec)
    # exec CMD...: CMD where a load node's processes run, in the node's
    # network namespace with the swarm daemon as DOCKER_HOST (the loadgen,
    # its workers and the tests; make bench DIST=swarm).
    shift
    [ $# -gt 0 ] || { say "usage: swarm.sh exec CMD [ARG...]"; exit 2; }
    answers || { say "no swarm daemon answers on $SOCK: scripts/swarm.sh up first"; exit 1; }
    exec nsenter --net=/run/netns/"$NS" env DOCKER_HOST="unix://$SOCK" "$@" ;;
  env)
    # What a run on the swarm needs to know, as shell assignments.
    echo "SWARM_DOCKER_HOST=unix://$SOCK"
    echo "SWARM_NODE_ADDR=$NODE_ADDR"
    echo "SWARM_PROM=http://$NODE_ADDR:9090"
    # host.docker.internal in a task: where Prometheus scrapes the loadgen
    # and its workers, which listen there inside the namespace.
    echo "SWARM_METRICS_HOST=${BIP%/*}" ;;
  *) echo "usage: swarm.sh up|down|status|start|wait|exec CMD...|env" >&2; exit 2 ;;
esac
