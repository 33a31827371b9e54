#!/usr/bin/env bash
# compose.sh ARGS...: runs the compose tool on the proxybench stack with the
# right files: the users' compose file, the host-network override (HOSTNET=1,
# the default) and the image names written by scripts/images.sh.
#   compose.sh --gateway   prints the host's address on the docker bridge:
#   what containers reach as host.docker.internal (the loadgen's /metrics on
#   the bridge network binds it)
set -euo pipefail
cd "$(dirname "$0")/.."
# The docker bridge's gateway, read from the engine: Debian's dockerd 20.10
# can write "<nil>" for host-gateway after a live restore, so the address is
# passed explicitly.
gateway() { docker network inspect bridge -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null; }
if [ "${1:-}" = --gateway ]; then gateway; exit; fi
files=(-p proxybench -f compose/docker-compose.yml)
if [ "${HOSTNET:-1}" = 1 ]; then
  files+=(-f compose/docker-compose.hostnet.yml)
else
  # A caller's own (scripts/swarm.sh: another engine's) wins.
  [ -n "${HOST_GATEWAY:-}" ] || HOST_GATEWAY=$(gateway) || true
  export HOST_GATEWAY=${HOST_GATEWAY:-host-gateway}
fi
[ -f compose/images.env ] && files+=(--env-file compose/images.env)
[ -n "${CUSTOM_IMAGE:-}" ] && files+=(--profile custom)
# LISTEN: where the lab listens (host network) or publishes (bridge).
# Loopback unless exposing it is chosen on purpose (docs/security.md).
case ${LISTEN:=127.0.0.1} in
  127.0.0.1 | 0.0.0.0) export LISTEN ;;
  *) echo "compose: LISTEN=$LISTEN: want 127.0.0.1 (the default, loopback only) or 0.0.0.0 (every interface: read the docs/security.md first)" >&2; exit 2 ;;
esac
# Grafana needs an admin password only when it runs; keep `config`/`down` usable without one.
export GRAFANA_ADMIN_PASSWORD=${GRAFANA_ADMIN_PASSWORD:-}
exec docker compose "${files[@]}" "$@"
