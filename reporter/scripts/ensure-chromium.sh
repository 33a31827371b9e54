#!/usr/bin/env bash
# ensure-chromium.sh: installs Debian's headless-capable chromium when it is
# missing (the report.html screenshot test needs it) and prints its path.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  source "$(dirname "$0")/../../scripts/jobs.sh" # make prepare runs other apt-gets meanwhile
  export DEBIAN_FRONTEND=noninteractive
  apt_locked apt-get update -qq >/dev/null
  apt_locked apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
command -v chromium
