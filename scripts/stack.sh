#!/usr/bin/env bash
# stack.sh up|stop|down|wait|running: the proxybench stack's lifecycle.
#   up       engine + images, the lab's TLS certificate (loadgen certs), then
#            start every service with its CPU placement
#            (PLACEMENT=auto|none, default the PLAN file's placement section,
#            else auto) and wait until healthy
#   stop     remove the containers, keep Prometheus's data volume
#   down     remove every container and network of the project; Prometheus's
#            data volume (the lab's run history) stays, as compose keeps volumes
#   purge    down, and remove the volumes too
#   running  exit 0 when the stack's proxies are already up (bench leaves it so)
#   services the services `up` starts, on one line
#   compose ARGS...  scripts/compose.sh ARGS with the variables `up` sets
#            (placement, TLS): scripts/swarm.sh renders its stack with it
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'stack: %s\n' "$*" >&2; }

services() {
  # Grafana cannot be pulled or built offline; the offline stack runs without it.
  local s="nginx haproxy traefik caddy origin-node origin-python origin-go origin-fast origin-fast-b docker-filter exporter prometheus"
  grep -q '^OFFLINE=0' compose/images.env 2>/dev/null && s="$s grafana"
  [ -n "${CUSTOM_IMAGE:-}" ] && s="$s custom"
  echo "$s"
}

# ready NAME STATUS: docker's healthcheck passed, or the container is up and
# its healthcheck URL answers from the host. Docker probes only every 15 s (a
# probe is an exec inside the container: at 2 s across the stack they cost
# dockerd and containerd a tenth of a core and landed in the proxies' own
# CPU); asking the same URL ourselves keeps `up` as quick as before.
ready() {
  local url
  case $2 in *'(healthy)'*) return 0 ;; Up*) ;; *) return 1 ;; esac
  url=$(docker inspect -f '{{if .Config.Healthcheck}}{{range .Config.Healthcheck.Test}}{{.}} {{end}}{{else}}none{{end}}' "$1" 2>/dev/null | awk '{print $NF}')
  [ "$url" = none ] && return 0 # no healthcheck: running is all we can know
  [[ $url == http://127.0.0.1:* ]] && curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null
}

# placement_env sets the compose file's CPU placement variables from
# `loadgen placement`, the one plan (internal/placement) that `loadgen run`
# checks the stack against. A changed placement changes the containers'
# configuration, so compose recreates them.
placement_env() {
  local vars k v
  # scripts/images.sh has just built it; build it when something removed it.
  [ -x .cache/dist/loadgen ] || CGO_ENABLED=0 go build -o .cache/dist/loadgen ./loadgen
  vars=$(.cache/dist/loadgen placement ${PLACEMENT:+-placement "$PLACEMENT"} ${PLAN:+-plan "$PLAN"}) || exit 2
  while IFS='=' read -r k v; do
    [ -n "$k" ] && export "$k=$v"
  done <<<"$vars"
}

# certs_env makes sure the lab's CA and the proxies' TLS certificate exist
# and are valid (`loadgen certs`, internal/tlscert; TLS_KEY=ecdsa|rsa) and
# sets TLS_CERT_SHA256, so that a new certificate recreates the proxies;
# TLS_MIN_VERSION is the lowest TLS version every proxy's TLS port accepts.
certs_env() {
  local vars k v
  case ${TLS_MIN_VERSION:=1.3} in
    1.2 | 1.3) export TLS_MIN_VERSION ;;
    *) say "TLS_MIN_VERSION=$TLS_MIN_VERSION: want 1.3 (the default) or 1.2"; exit 2 ;;
  esac
  vars=$(.cache/dist/loadgen certs) || exit 2
  while IFS='=' read -r k v; do
    [ -n "$k" ] && export "$k=$v"
  done <<<"$vars"
}

wait_healthy() {
  local deadline=$((SECONDS + ${WAIT_SECONDS:-120})) bad name status
  while :; do
    bad=""
    while read -r name status; do
      ready "$name" "$status" || bad+="$name $status"$'\n'
    done < <(docker ps -a --filter label=com.docker.compose.project=proxybench --format '{{.Names}} {{.Status}}')
    bad=${bad%$'\n'}
    [ -z "$bad" ] && return 0
    # A container that exited will not become healthy: say so now.
    if [ $SECONDS -ge $deadline ] || echo "$bad" | grep -q ' Exited '; then
      say "not healthy (waited $((SECONDS - deadline + ${WAIT_SECONDS:-120})) s):"; echo "$bad" >&2
      for c in $(echo "$bad" | awk '{print $1}'); do say "--- logs of $c"; docker logs --tail 20 "$c" 2>&1 | sed 's/^/  /' >&2; done
      return 1
    fi
    sleep 1
  done
}

case ${1:-} in
  up)
    # On a new host the compose plugin's build (minutes) runs next to the
    # image builds instead of before them.
    if docker compose version >/dev/null 2>&1; then
      scripts/engine.sh
      scripts/images.sh
    else
      source scripts/jobs.sh
      job_start compose scripts/gobin.sh compose
      ENGINE_COMPOSE=skip scripts/engine.sh
      scripts/images.sh
      job_wait compose
      scripts/engine.sh # installs the plugin just built
    fi
    if [[ " $(services) " == *" grafana "* ]] && [ -z "${GRAFANA_ADMIN_PASSWORD:-}" ]; then
      say "Grafana needs an admin password: set GRAFANA_ADMIN_PASSWORD (anonymous viewers get read-only access)"; exit 2
    fi
    grep -q '^OFFLINE=1' compose/images.env && say "offline: Grafana has no local image; the stack runs without it (dashboards are checked against Prometheus)"
    placement_env
    certs_env
    # shellcheck disable=SC2046
    scripts/compose.sh up -d --no-build $(services) >&2
    # A quota changed in place (a duet's candidate whose loadgen was killed,
    # a docker update by hand) is no configuration change compose sees: set
    # every proxy's back to the placement's.
    for c in $(docker ps -q --filter label=com.docker.compose.project=proxybench --filter label=proxybench.role=proxy); do
      docker update --cpus "$PROXY_CPUS" "$c" >/dev/null
    done
    wait_healthy
    say "up: $(services)" ;;
  stop)
    # Containers and networks go; the Prometheus volume stays, so `make report`
    # can rebuild any run later (`make down PURGE=1` removes it).
    docker info >/dev/null 2>&1 || exit 0
    scripts/compose.sh --profile custom down --remove-orphans --timeout 5 >&2
    say "stopped (Prometheus data kept)" ;;
  down|purge)
    docker info >/dev/null 2>&1 || exit 0
    vol=; [ "$1" = purge ] && vol=-v
    scripts/compose.sh --profile custom down $vol --remove-orphans --timeout 5 >&2 2>/dev/null || scripts/compose.sh down $vol --remove-orphans --timeout 5 >&2
    left=$(docker ps -aq --filter label=com.docker.compose.project=proxybench)
    [ -n "$left" ] && docker rm -f $left >/dev/null
    if [ "$1" = purge ]; then say "down, volumes removed"; else say "down (Prometheus data kept; make down PURGE=1 removes it)"; fi ;;
  wait) wait_healthy ;;
  services) services ;;
  compose)
    shift
    placement_env
    certs_env
    exec scripts/compose.sh "$@" ;;
  running)
    docker info >/dev/null 2>&1 || exit 1
    [ -n "$(docker ps -q --filter label=com.docker.compose.project=proxybench --filter label=proxybench.role=proxy)" ] ;;
  *) echo "usage: stack.sh up|stop|down|purge|wait|running|services|compose ARGS..." >&2; exit 2 ;;
esac
