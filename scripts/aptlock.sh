# aptlock.sh (sourced, not run): apt_locked CMD... runs CMD (an apt-get)
# holding the project's one apt lock, so that two scripts installing at once
# wait for each other instead of failing on dpkg's own lock.
apt_locked() { flock "${PROXYBENCH_APT_LOCK:-/tmp/proxybench-apt.lock}" "$@"; }
