#!/usr/bin/env bash
# engine.sh makes sure a Docker engine and a compose tool answer.
# Idempotent: when `docker info` works and compose is found, it does nothing.
# On a root Debian machine without an engine it installs Debian's docker.io,
# starts dockerd in the background with its log in a file, and installs the
# compose v2 CLI plugin built from the Go module proxy (Debian ships only
# compose v1, which refuses host networking next to published ports).
# The daemon it starts runs with live-restore (/etc/docker/daemon.json, also
# turned on by a reload in a dockerd it started before): the stack's
# containers keep running while dockerd restarts, so a run survives it.
#   engine.sh restart   restarts the dockerd this script started (or the
#                       systemd unit), as an outage test does
#   ENGINE_COMPOSE=skip engine.sh   the engine only: a caller that builds
#                       the compose plugin next to other builds
#                       (stack.sh up, prepare.sh) installs it with a
#                       second engine.sh once that build is done
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${PROXYBENCH_STATE:-$PWD/.cache}/dockerd
mkdir -p "$LOG_DIR"

say() { printf 'engine: %s\n' "$*" >&2; }

have_compose() { [ "${ENGINE_COMPOSE:-}" = skip ] || docker compose version >/dev/null 2>&1; }

# live_restore_config turns live-restore on for the next start or reload.
live_restore_config() { mkdir -p /etc/docker && echo '{"live-restore": true}' >/etc/docker/daemon.json; }

systemd_docker() { command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker 2>/dev/null; }

# live_restore: on for a daemon this script runs (no systemd unit), by the
# reloadable daemon.json option and SIGHUP, so no container restarts.
live_restore() {
  [ "$(docker info -f '{{.LiveRestoreEnabled}}' 2>/dev/null)" = true ] && return 0
  if systemd_docker || [ "$(id -u)" != 0 ] || { [ -s /etc/docker/daemon.json ] && ! grep -q '^{}$' /etc/docker/daemon.json; }; then
    say "note: dockerd runs without live-restore: restarting it stops the stack (set \"live-restore\": true in /etc/docker/daemon.json)"
    return 0
  fi
  live_restore_config
  pkill -HUP -x dockerd || true
  for _ in $(seq 1 20); do
    [ "$(docker info -f '{{.LiveRestoreEnabled}}' 2>/dev/null)" = true ] && return 0
    sleep 0.5
  done
  say "note: dockerd did not turn live-restore on; see $LOG_DIR/dockerd.log"
}

if [ "${1:-}" = restart ]; then
  if systemd_docker; then
    systemctl restart docker
  else
    pid=$(pgrep -xo dockerd) || { say "no dockerd is running to restart"; exit 1; }
    say "restarting dockerd (pid $pid)"
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && { say "dockerd (pid $pid) did not stop within 30 s"; exit 1; }
  fi
fi

if [ "${1:-}" != restart ] && docker info >/dev/null 2>&1 && have_compose; then
  live_restore
  exit 0
fi

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  say "no Docker engine answers (docker info failed) and this is not a root Debian machine."
  say "install Docker Engine and the compose plugin (https://docs.docker.com/engine/install/), start it, and rerun."
  exit 1
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian (log: $LOG_DIR/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}" iptables ca-certificates; } >"$LOG_DIR/apt.log" 2>&1 ||
    { say "apt-get failed; see $LOG_DIR/apt.log"; exit 1; }
fi

if ! docker info >/dev/null 2>&1; then
  [ -s /etc/docker/daemon.json ] || live_restore_config
  say "starting dockerd (log: $LOG_DIR/dockerd.log)"
  # No systemd on such hosts: run the daemon ourselves, detached from this shell.
  if ! pgrep -x dockerd >/dev/null; then
    source scripts/detach.sh
    detach "$LOG_DIR/dockerd.log" env PATH="/usr/sbin:/usr/bin:$PATH" dockerd
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { say "dockerd did not answer within 60 s; see $LOG_DIR/dockerd.log"; tail -20 "$LOG_DIR/dockerd.log" >&2; exit 1; }
fi
if ! have_compose; then
  if [ "$(id -u)" != 0 ]; then
    say "the docker compose v2 plugin is missing; install it (https://docs.docker.com/compose/install/linux/) and rerun"; exit 1
  fi
  say "building the docker compose v2 plugin from the Go module proxy (once; about 6 min)"
  bin=$(scripts/gobin.sh compose 2>"$LOG_DIR/compose-build.log") || { tail -20 "$LOG_DIR/compose-build.log" >&2; exit 1; }
  install -D -m 0755 "$bin" /usr/local/lib/docker/cli-plugins/docker-compose
fi
if [ "${ENGINE_COMPOSE:-}" = skip ]; then
  say "docker $(docker version --format '{{.Server.Version}}') is up"
else
  say "docker $(docker version --format '{{.Server.Version}}') and $(docker compose version --short 2>/dev/null | sed 's/^/compose /') are up"
fi
