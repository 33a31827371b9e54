# hostpkgs.sh (sourced, not run): the Debian packages a study needs on the
# host itself, installed when missing (scripts/study.sh and scripts/e2e.sh).
#
#   study_needs NAME   ensures what study NAME runs outside containers:
#                      cc iperf3; netstack the nginx of the lab's image
#                      (the same Debian version); the others nothing
source "$(dirname "${BASH_SOURCE[0]}")/aptlock.sh"

# needs CMD PACKAGE [VERSION]: Debian's PACKAGE (at VERSION, with its
# -common package) when CMD is missing or, with VERSION, of another version.
# The nginx package's maintainer scripts would start a service on port 80: a
# policy-rc.d that refuses every start holds while it installs.
needs() {
  local have=""
  command -v "$1" >/dev/null && have=$(dpkg-query -W -f '${Version}' "$2" 2>/dev/null)
  [ -n "$have" ] && { [ -z "${3:-}" ] || [ "$have" = "$3" ]; } && return 0
  local pkgs=("$2")
  [ -n "${3:-}" ] && pkgs=("$2=$3" "$2-common=$3")
  [ "$(id -u)" = 0 ] || { hostpkgs_say "$1 is missing or not ${3:-any} version: install Debian's ${pkgs[*]} (apt-get install ${pkgs[*]}) and rerun"; return 1; }
  set -- "$1" "${pkgs[@]}"
  hostpkgs_say "installing Debian's ${*:2} (apt-get)"
  local prc=/usr/sbin/policy-rc.d had=0
  [ -e $prc ] && had=1
  if [ $had = 0 ]; then printf '#!/bin/sh\nexit 101\n' >$prc; chmod +x $prc; fi
  DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -q --no-install-recommends --allow-downgrades "${@:2}" >/dev/null 2>&1 ||
    { apt_locked apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt_locked apt-get install -y -q --no-install-recommends --allow-downgrades "${@:2}" >/dev/null; }
  local rc=$?
  [ $had = 1 ] || rm -f $prc
  [ $rc = 0 ] && command -v "$1" >/dev/null || { hostpkgs_say "apt-get install ${*:2} failed"; return 1; }
}

hostpkgs_say() { printf 'hostpkgs: %s\n' "$*" >&2; }

study_needs() {
  case $1 in
    cc) needs iperf3 iperf3 ;;
    netstack) # the host's nginx is the image's Debian build, the same version
      local img v
      img=$(sed -n 's/^NGINX_IMAGE=//p' compose/images.env 2>/dev/null)
      v=$(docker run --rm --network none "${img:-nginx:1.22.1}" dpkg-query -W -f '${Version}' nginx) ||
        { hostpkgs_say "cannot read nginx's version in ${img:-nginx:1.22.1}"; return 1; }
      needs nginx nginx "$v" ;;
  esac
}
