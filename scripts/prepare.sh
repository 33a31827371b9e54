#!/usr/bin/env bash
# prepare.sh (make prepare): what make test needs before its first test: a
# Docker engine and compose (scripts/engine.sh), every image
# (scripts/images.sh), the pinned prometheus and promtool (scripts/gobin.sh)
# and chromium for the report.html test (reporter/scripts/ensure-chromium.sh).
# The Prometheus build and the chromium install run as background jobs next
# to the engine and the images (logs in .cache/logs/prepare/); every failure
# is reported with the end of its log; when the engine or the images fail,
# the jobs still running are stopped. A second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/jobs.sh

# Needs no engine; images.sh (offline) waits for this same build rather than
# starting its own.
job_start prometheus bash -c 'scripts/gobin.sh prometheus && scripts/gobin.sh promtool'
# The compose plugin (when missing) builds next to the images; engine.sh
# installs it once built.
docker compose version >/dev/null 2>&1 || job_start compose scripts/gobin.sh compose
ENGINE_COMPOSE=skip scripts/engine.sh
job_start chromium reporter/scripts/ensure-chromium.sh # after engine.sh's own apt-get
scripts/images.sh
[ -z "${JOB_PID[compose]:-}" ] || job_wait compose
scripts/engine.sh
rc=0
for job in "${!JOB_PID[@]}"; do job_wait "$job" || rc=1; done
exit "$rc"
