#!/usr/bin/env bash
# swarm.sh up|down|status: the lab's proxies, origins, exporter and
# Prometheus as a Docker Swarm stack (docs/swarm.md), on a second Docker
# daemon the project runs itself. The shared engine (scripts/engine.sh) keeps
# live-restore, which swarm mode refuses, and is only read from: the stack's
# images are copied out of it.
#   up      the daemon of node 1 (no live-restore; its data-root in
#           .cache/swarm, its socket and exec-root in /run/proxybench-swarm,
#           its containers under the cgroup /proxybench-swarm) in a network
#           namespace of its own, and those of nodes 2..SWARM_NODES (each
#           also in mount and UTS namespaces of its own); every node linked
#           by a veth pair to one bridge in the namespace pbswarm-lan, and
#           the host too (198.18.0.1; node K 198.18.0.K+1: RFC 2544's
#           benchmarking range; the namespaces have no other route, and the
#           host a route making the rest of 198.18.0.0/15 unreachable); the
#           images each node lacks (docker save | docker load); a swarm
#           advertised on 198.18.0.2 that the other nodes join, each node
#           labelled with its SWARM_ROLES and its engine's socket; the stack
#           deployed from compose/docker-compose.yml (+
#           docker-compose.swarm.yml, through `docker compose config` and
#           `loadgen swarmstack`); waits until every service runs n/n and
#           every route answers from inside the proxies' node's namespace
#           (loadgen preflight). Idempotent; a node beyond SWARM_NODES
#           leaves.
#   down    everything up made, on every node: the stack and the swarm go
#           with the daemons; their containerd, leftover containers (by
#           their cgroup), mounts, the namespaces, the veth pairs and the
#           bridge, the host's route, and the data-roots' contents but
#           their image stores, which the next up reuses (SWARM_PURGE=1
#           removes those too; the daemons' logs stay, in
#           .cache/swarm/dockerd.log and .cache/swarm/node-K/dockerd.log).
#           After a crash at any point it removes what is left, and up
#           starts by doing the same when its daemon is gone.
#   status  what exists and answers; exit 0 when the stack runs n/n on
#           SWARM_NODES nodes
#   start   up in the background, unless the stack already runs; wait
#           collects its exit status (and says whether it brought it up)
#   stop    down in the background; wait-down collects its exit status
#   exec CMD...  CMD in node 1's network namespace, DOCKER_HOST its daemon
#   env     the swarm's addresses as shell assignments (SWARM_PROM, ...)
# SWARM_NODES (1-3, default 1) is how many nodes, SWARM_ROLES their roles
# (docs/swarm.md); SWARM_WAIT (default 180) bounds how many seconds up
# waits for the services.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'swarm: %s\n' "$*" >&2; }
T0=$EPOCHREALTIME
# step NAME: the time since the script started, then what comes next.
step() { say "$(awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%6.1f s", b - a}'): $*"; }

# The nodes (SWARM_NODES, 1-3): node 1 is the manager, where the loadgen and
# its workers run (swarm.sh exec); nodes 2 and 3 are further daemons, each
# in a network, mount and UTS namespace of its own: a machine of its own in
# all the lab can tell. Every node's link is a veth pair to a bridge in the
# namespace pbswarm-lan, as machines on one switch; the host's own veth to
# it holds 198.18.0.1.
NODES=${SWARM_NODES:-1}
case $NODES in 1 | 2 | 3) ;; *) say "SWARM_NODES=$NODES: give 1, 2 or 3 nodes"; exit 2 ;; esac
# SWARM_ROLES: the roles of each node, a comma list per node, nodes apart by
# spaces. Node 1 keeps observe: Prometheus is asked on its address. The
# loadgen runs on node 1 (swarm.sh exec), and so do its workers unless
# they run as Swarm services (loadgen run -launch swarm), on the load
# nodes.
case $NODES in
  1) DEFAULT_ROLES="sut,load,origin,observe" ;;
  2) DEFAULT_ROLES="load,origin,observe sut" ;;
  3) DEFAULT_ROLES="load,observe sut origin" ;;
esac
read -r -a ROLES <<<"${SWARM_ROLES:-$DEFAULT_ROLES}"
# check_roles: SWARM_ROLES fits SWARM_NODES and node 1 (up then checks
# each role's name through loadgen swarmstack).
check_roles() {
  [ ${#ROLES[@]} = "$NODES" ] || { say "SWARM_ROLES=\"${SWARM_ROLES:-}\" gives ${#ROLES[@]} nodes' roles for SWARM_NODES=$NODES: give one comma list per node"; exit 2; }
  [[ ,${ROLES[0]}, == *,observe,* ]] ||
    { say "SWARM_ROLES: node 1 (${ROLES[0]}) must take observe: Prometheus is asked at its address"; exit 2; }
  [[ " ${ROLES[*]} " =~ [\ ,]load[\ ,] ]] || { say "SWARM_ROLES=\"${ROLES[*]}\": no node takes load"; exit 2; }
}
MAX_NODES=3
LAN_NS=pbswarm-lan         # the switch: a bridge in a namespace of its own
LAN_BR=lan0
HOST_IF=pbswarm0           # veth end on the host
HOST_PEER=h0               # its other end, on the bridge
HOST_ADDR=198.18.0.1
LINK_PREFIX=24
GUARD=198.18.0.0/15        # the whole range: unreachable from the host but through the veth
OVERLAY_POOL=198.19.0.0/16 # the swarm's overlay networks, /24 each
CGROUP=proxybench-swarm    # every node's containers under it (node K > 1: node-K below it)
STACK=proxybench
BASE_STATE=$PWD/.cache/swarm
TARGETS=$BASE_STATE/targets # the loadgen workers' scrape targets (file_sd), the swarm's own

# node K: the variables of node K.
node() {
  K=$1
  if [ "$K" = 1 ]; then
    NS=pbswarm RUN=/run/proxybench-swarm STATE=$BASE_STATE NODE_CGROUP=$CGROUP DAEMON_NAME=pbswarm-dockerd NODE_HOST=
  else
    NS=pbswarm-$K RUN=/run/proxybench-swarm-$K STATE=$BASE_STATE/node-$K NODE_CGROUP=$CGROUP/node-$K
    DAEMON_NAME=pbswarm-node$K NODE_HOST=pbswarm-$K
  fi
  NS_IF=pbswarm1                     # veth end in the node's namespace
  LAN_IF=n$K                         # its other end, on the bridge
  NODE_ADDR=198.18.0.$((K + 1))      # swarm advertise, data path, published ports
  BIP=198.18.$K.1/24                 # the daemon's docker0, inside its namespace
  LOCAL_POOL=198.18.$((64 * K)).0/18 # its local networks (docker_gwbridge)
  SOCK_DIR=$RUN/sock                 # the socket alone: the docker filter mounts this directory
  SOCK=$SOCK_DIR/docker.sock
  DATA=$STATE/data
  CTRD_NS=$CGROUP; [ "$K" = 1 ] || CTRD_NS=$CGROUP-$K # its containerd's namespace
}
node 1
FIRST_SOCK_DIR=$SOCK_DIR
# The daemons run as pbswarm-dockerd and pbswarm-nodeK (symlinks), so that
# engine.sh's `pgrep -x dockerd` and `pkill -HUP -x dockerd` only ever see
# the shared one.

dk() { docker --host "unix://$SOCK" "$@"; }
answers() { [ -S "$SOCK" ] && dk info >/dev/null 2>&1; }
daemon_pid() {
  local pid
  pid=$(cat "$RUN/dockerd.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$DAEMON_NAME" ] && echo "$pid"
}

# our_pids, cleanup and cleanup_all: what the daemons left.
source scripts/swarm-clean.sh

# lan_up: the bridge all nodes' links meet on, and the host's link to it.
lan_up() {
  if ip netns list | grep -qx "$LAN_NS\( .*\)\?" && ip -br addr show dev "$HOST_IF" 2>/dev/null | grep -q "$HOST_ADDR/" &&
    ip route show type unreachable | grep -q "^unreachable $GUARD"; then
    return 0
  fi
  ip netns del "$LAN_NS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  # Nothing for the benchmarking range leaves the host: without this, a
  # request to a node's address while its link is down would take the
  # default route.
  ip route replace unreachable "$GUARD"
  ip netns add "$LAN_NS"
  ip -n "$LAN_NS" link add "$LAN_BR" type bridge
  ip -n "$LAN_NS" link set "$LAN_BR" up
  ip link add "$HOST_IF" type veth peer name "$HOST_PEER" netns "$LAN_NS"
  ip -n "$LAN_NS" link set "$HOST_PEER" master "$LAN_BR" up
  ip addr add "$HOST_ADDR/$LINK_PREFIX" dev "$HOST_IF"
  ip link set "$HOST_IF" up
}

# link_up: the current node's namespace and its link to the LAN.
link_up() {
  if ip netns list | grep -qx "$NS\( .*\)\?" && ip -n "$NS" -br addr show dev "$NS_IF" 2>/dev/null | grep -q "$NODE_ADDR/"; then
    return 0
  fi
  ip netns del "$NS" 2>/dev/null || true
  ip -n "$LAN_NS" link del "$LAN_IF" 2>/dev/null || true
  ip netns add "$NS"
  ip -n "$LAN_NS" link add "$LAN_IF" type veth peer name "$NS_IF" netns "$NS"
  ip -n "$LAN_NS" link set "$LAN_IF" master "$LAN_BR" up
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$NODE_ADDR/$LINK_PREFIX" dev "$NS_IF"
  ip -n "$NS" link set "$NS_IF" up
}

# daemon_up: the current node's daemon, answering.
daemon_up() {
  answers && return 0
  if pid=$(daemon_pid); then # starting: give it the time a start takes
    for _ in $(seq 1 60); do answers && return 0; kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  say "node $K: no daemon of ours answers: removing what an earlier one left"
  if [ "$K" = 1 ]; then cleanup_all; node 1; else cleanup; fi
  lan_up
  link_up
  mkdir -p "$DATA" "$SOCK_DIR" "$STATE/bin"
  ln -sf "$(command -v dockerd)" "$STATE/bin/$DAEMON_NAME"
  # Its own config file: the shared engine's /etc/docker/daemon.json
  # (live-restore) is never read. Its own containerd (started by it, under
  # $RUN), its own iptables (those of the namespace).
  cat >"$STATE/daemon.json" <<JSON
{
  "data-root": "$DATA",
  "exec-root": "$RUN/exec",
  "pidfile": "$RUN/dockerd.pid",
  "hosts": ["unix://$SOCK"],
  "live-restore": false,
  "cgroup-parent": "/$NODE_CGROUP",
  "bip": "$BIP",
  "default-address-pools": [{"base": "$LOCAL_POOL", "size": 24}],
  "containerd-namespace": "$CTRD_NS",
  "containerd-plugins-namespace": "$CTRD_NS-plugins",
  "storage-driver": "overlay2",
  "ip6tables": false
}
JSON
  say "node $K: starting its dockerd in network namespace $NS (log: $STATE/dockerd.log)"
  source scripts/detach.sh
  # DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1: a task uses the node's image and
  # never asks a registry for it.
  local run=(env DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 PATH="/usr/sbin:/usr/bin:$PATH" "$STATE/bin/$DAEMON_NAME" --config-file "$STATE/daemon.json")
  if [ "$K" = 1 ]; then
    detach "$STATE/dockerd.log" nsenter --net=/run/netns/"$NS" "${run[@]}"
  else
    # A node of its own: its own hostname (the name the report shows), and
    # in a mount namespace of its own node 1's socket directory (which the
    # stack's docker filter mounts on every node) holding its own socket.
    detach "$STATE/dockerd.log" nsenter --net=/run/netns/"$NS" unshare --mount --uts --propagation private \
      sh -c 'hostname "$1" && mkdir -p "$2" && mount --bind "$3" "$2" && shift 3 && exec "$@"' sh \
      "$NODE_HOST" "$FIRST_SOCK_DIR" "$SOCK_DIR" "${run[@]}"
  fi
  for _ in $(seq 1 120); do answers && return 0; sleep 0.5; done
  say "node $K: its dockerd did not answer within 60 s:"; tail -20 "$STATE/dockerd.log" >&2
  return 1
}

# labels K: node K's role labels (those of its SWARM_ROLES; the other roles'
# removed) and its engine's address, set through the manager.
labels() {
  local k=$1 id want have l add=() rm=()
  node "$k"
  id=$(dk info -f '{{.Swarm.NodeID}}')
  want=$(.cache/dist/loadgen swarmstack -node-labels -roles "${ROLES[$((k - 1))]}" -engine "unix://$SOCK") ||
    { say "loadgen swarmstack -node-labels failed"; return 1; }
  node 1
  have=$(dk node inspect -f '{{range $k, $v := .Spec.Labels}}{{$k}}={{$v}}{{"\n"}}{{end}}' "$id")
  for l in $want; do add+=(--label-add "$l"); done
  for l in $(.cache/dist/loadgen swarmstack -node-labels); do
    grep -qxF "$l" <<<"$want" || ! grep -qxF "$l" <<<"$have" || rm+=(--label-rm "${l%%=*}")
  done
  dk node update "${add[@]}" "${rm[@]}" "$id" >/dev/null
}

# nodes_up: the daemons of nodes 2..NODES, and no daemon of a node beyond
# them (one that leaves the swarm is removed from it).
nodes_up() {
  local k id
  for k in $(seq 2 "$MAX_NODES"); do
    node "$k"
    if [ "$k" -le "$NODES" ]; then
      daemon_up
      continue
    fi
    answers || [ -d "$RUN" ] || continue
    say "node $k: leaving the swarm (SWARM_NODES=$NODES)"
    id=$(dk info -f '{{.Swarm.NodeID}}' 2>/dev/null) || id=
    dk swarm leave --force >/dev/null 2>&1 || true
    cleanup
    node 1
    [ -z "$id" ] || dk node rm --force "$id" >/dev/null 2>&1 || true
  done
  node 1
}

# swarm_up: the swarm on node 1, nodes 2..NODES joined, and every node's
# labels.
swarm_up() {
  local k token mgr
  node 1
  if [ "$(dk info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
    dk swarm init --advertise-addr "$NODE_ADDR" --listen-addr "$NODE_ADDR:2377" --data-path-addr "$NODE_ADDR" \
      --default-addr-pool "$OVERLAY_POOL" --default-addr-pool-mask-length 24 >/dev/null
  fi
  token=$(dk swarm join-token -q worker) mgr=$NODE_ADDR:2377
  for k in $(seq 2 "$NODES"); do
    node "$k"
    if [ "$(dk info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
      say "node $k: joining the swarm at $mgr"
      dk swarm join --token "$token" --advertise-addr "$NODE_ADDR" --listen-addr "$NODE_ADDR:2377" \
        --data-path-addr "$NODE_ADDR" "$mgr" >/dev/null
    fi
  done
  for k in $(seq 1 "$NODES"); do labels "$k"; done
  node 1
}

# compose_model prints the stack's compose model: the users' file (its own
# networks: HOSTNET=0) with the Swarm override, the services the lab runs,
# the variables `stack.sh up` sets (placement, TLS).
compose_model() {
  # shellcheck disable=SC2046
  mkdir -p "$TARGETS"
  PLACEMENT=none PLAN= HOSTNET=0 HOST_GATEWAY=host-gateway SWARM_ENGINE_RUN=$FIRST_SOCK_DIR EXPORTER_CGROUP_PREFIXES=/$CGROUP/ SWARM_TARGETS=$TARGETS \
    scripts/stack.sh compose -f compose/docker-compose.swarm.yml config "$@" $(scripts/stack.sh services)
}

# images_up: on every node, the stack's images it lacks, from the shared
# engine (the nodes load theirs at the same time).
images_up() {
  local img want have k pids=() imgs
  imgs=$(compose_model --images | sort -u)
  for k in $(seq 1 "$NODES"); do
    node "$k"
    local missing=()
    for img in $imgs; do
      want=$(docker image inspect -f '{{.Id}}' "$img")
      have=$(dk image inspect -f '{{.Id}}' "$img" 2>/dev/null) || true
      [ "$want" = "$have" ] || missing+=("$img")
    done
    [ ${#missing[@]} -eq 0 ] && continue
    say "node $k: copying ${#missing[@]} images from the shared engine: ${missing[*]}"
    docker save "${missing[@]}" | dk load -q >/dev/null &
    pids+=($!)
  done
  node 1
  for k in "${pids[@]}"; do wait "$k" || return 1; done
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
# compose stack: in the namespace of the node that runs the proxies, so
# that with several nodes each request crosses the overlay to an origin.
routes() {
  local k sut=1
  for k in $(seq 1 "$NODES"); do [[ ,${ROLES[$((k - 1))]}, == *,sut,* ]] && sut=$k && break; done
  node "$sut"
  nsenter --net=/run/netns/"$NS" .cache/dist/loadgen preflight -no-docker -wait "${1:-0s}"
  node 1
}

case ${1:-} in
  up)
    [ "$(id -u)" = 0 ] || { say "needs root (a network namespace, a second dockerd)"; exit 2; }
    check_roles
    exec 9>/run/proxybench-swarm.lock
    flock 9
    scripts/engine.sh
    scripts/images.sh
    # The loadgen renders the stack file and checks the routes: built from
    # this checkout (a clean clone has none yet).
    CGO_ENABLED=0 go build -o .cache/dist/loadgen ./loadgen
    for r in "${ROLES[@]}"; do
      .cache/dist/loadgen swarmstack -node-labels -roles "$r" >/dev/null || { say "SWARM_ROLES: a node's roles \"$r\" name an unknown role"; exit 2; }
    done
    step "the daemons of $NODES node(s)"
    daemon_up
    nodes_up
    step "the images"
    images_up
    step "the swarm, its nodes and their labels"
    swarm_up
    step "the stack"
    deploy
    step "waiting for every service to run n/n"
    wait_converged
    step "every route from inside the namespace of the proxies' node"
    routes 30s >&2
    step "up: $(dk service ls --filter "label=com.docker.stack.namespace=$STACK" --format '{{.Name}} {{.Replicas}}' | tr '\n' ' ')" ;;
  down)
    [ "$(id -u)" = 0 ] || { say "needs root"; exit 2; }
    exec 9>/run/proxybench-swarm.lock
    flock 9
    for k in $(seq "$MAX_NODES" -1 1); do
      node "$k"
      if answers; then
        # Nothing of the stack is kept: its containers are killed rather
        # than stopped (a graceful stop waits out each one's grace period);
        # leaving the swarm then removes the stack's tasks.
        # shellcheck disable=SC2046
        dk kill $(dk ps -q) >/dev/null 2>&1 || true
        dk swarm leave --force >/dev/null 2>&1 || true
        # Their containers go through the daemon, so the image store it
        # keeps (cleanup) holds no container's layers.
        dk container prune -f >/dev/null 2>&1 || true
        step "node $k left the swarm"
      fi
    done
    cleanup_all
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
    have=$(dk node ls -q 2>/dev/null | wc -l)
    [ "$have" = "$NODES" ] || { say "$have node(s) in the swarm, SWARM_NODES=$NODES: swarm.sh up makes it so"; exit 1; }
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
    source scripts/detach.sh
    detach_job "$STATE" start "$0" up
    say "up started in the background (log: $STATE/start.log)" ;;
  wait)
    # wait for `start`'s up: its exit status; 3 when no start is pending.
    # Prints "started" or "up-already" (whether this start brought it up).
    [ -f "$STATE/start.state" ] || { say "no swarm.sh start is pending"; exit 3; }
    state=$(cat "$STATE/start.state")
    rm -f "$STATE/start.state"
    if [ "$state" = started ]; then
      source scripts/detach.sh
      job_status "$STATE" start $((${SWARM_WAIT:-180} + 120)) || exit
      grep '^swarm: ' "$STATE/start.log" | tail -1 >&2 || true
    fi
    echo "$state" ;;
  stop)
    # down in the background (make test: beside the compose stack's first
    # steps); `wait-down` collects it.
    mkdir -p "$STATE" && touch "$STATE/stop.pending"
    source scripts/detach.sh
    detach_job "$STATE" stop "$0" down
    say "down started in the background (log: $STATE/stop.log)" ;;
  wait-down)
    # wait for `stop`'s down: its exit status; 0 when no stop is pending.
    [ -f "$STATE/stop.pending" ] || exit 0
    rm -f "$STATE/stop.pending"
    source scripts/detach.sh
    job_status "$STATE" stop 180 || exit
    grep '^swarm: ' "$STATE/stop.log" | tail -1 >&2 || true ;;
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
    echo "SWARM_NODES=$(dk node ls -q 2>/dev/null | wc -l)"
    # host.docker.internal in a task: where Prometheus scrapes the loadgen
    # and its workers, which listen there inside the namespace.
    echo "SWARM_METRICS_HOST=${BIP%/*}"
    # Where the loadgen lists its workers for the swarm's Prometheus
    # (loadgen run -prometheus-targets).
    echo "SWARM_TARGETS=$TARGETS" ;;
  *) echo "usage: swarm.sh up|down|status|start|wait|stop|wait-down|exec CMD...|env" >&2; exit 2 ;;
esac
