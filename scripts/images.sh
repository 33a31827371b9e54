#!/usr/bin/env bash
# images.sh makes every image the stack needs exist locally, and writes
# compose/images.env naming them for compose.
#   OFFLINE=auto (default): build the third-party images locally when the
#                           registry cannot be reached; else use upstream pins.
#   OFFLINE=1 / OFFLINE=0:  force one way.
# Our own programs are always built locally (static Go in scratch images; the
# node and python origins on a Debian base). Every image is tagged by a hash
# of its inputs, so a second run with unchanged inputs only checks tags.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=$PWD/.cache/dist
ENVF=compose/images.env
mkdir -p "$DIST"
say() { printf 'images: %s\n' "$*" >&2; }

offline=${OFFLINE:-auto}
if [ "$offline" = auto ]; then
  # One HEAD-sized probe of Docker Hub's registry; 401 means it is reachable.
  if curl -s -o /dev/null --max-time 3 -w '%{http_code}' https://registry-1.docker.io/v2/ 2>/dev/null | grep -q '^401$'; then
    offline=0
  else
    offline=1
  fi
fi

# scratch_image TAG BINARY PATH_IN_IMAGE [ENTRYPOINT_JSON]: a single static
# binary plus a /tmp, imported as an image (no Dockerfile, no registry).
scratch_image() {
  local tag=$1 bin=$2 dest=$3 entry=${4:-}
  docker image inspect "$tag" >/dev/null 2>&1 && return 0
  local root; root=$(mktemp -d)
  mkdir -p "$root/$(dirname "$dest")" "$root/tmp" "$root/etc"
  chmod 1777 "$root/tmp"
  cp "$bin" "$root/$dest"
  echo 'root:x:0:0:root:/:/bin/false' >"$root/etc/passwd"
  echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"$root/etc/passwd"
  local opts=(-c 'ENV PATH=/usr/local/bin:/bin')
  [ -n "$entry" ] && opts+=(-c "ENTRYPOINT $entry")
  tar -C "$root" -c . | docker import "${opts[@]}" - "$tag" >/dev/null
  rm -rf "$root"
  say "built $tag"
}

hash_of() { sha256sum "$@" | sha256sum | cut -c1-12; }

# Independent builds overlap (scripts/jobs.sh): offline, the Debian base
# (network-bound debootstrap) and the three third-party Go builds run as
# background jobs while our own programs build in the foreground; each job
# keeps its log in .cache/logs/images/. A second run only checks binaries and
# tags.
source scripts/jobs.sh
THIRD_PARTY="traefik caddy prometheus"
if [ "$offline" = 1 ]; then
  job_start base scripts/base-image.sh
  for p in $THIRD_PARTY; do job_start "$p" scripts/gobin.sh "$p"; done
fi

# Our Go programs: static, reproducible (-trimpath), so the hash is the input.
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
for prog in origins/go:origin-go origins/fast:origin-fast exporter:exporter compose/pbhealth:pbhealth loadgen:loadgen; do
  pkg=${prog%%:*} out=${prog##*:}
  go build -trimpath -ldflags '-s -w' -o "$DIST/$out" "./$pkg"
done

{
  echo "# written by scripts/images.sh ($( [ "$offline" = 1 ] && echo offline builds || echo upstream images ))"
  for prog in origin-go origin-fast exporter; do
    tag=proxybench/$prog:$(hash_of "$DIST/$prog")
    scratch_image "$tag" "$DIST/$prog" "/$prog" "[\"/$prog\"]"
    docker tag "$tag" "proxybench/$prog:dev"
    echo "$(echo "$prog" | tr a-z- A-Z_)_IMAGE=$tag"
  done

  if [ "$offline" = 1 ]; then
    for p in $THIRD_PARTY; do
      job_wait "$p" || exit 1
      bin=$(job_out "$p")
      ver=${bin##*/$p-} # the binary's version (and build tags, which a tag spells with dots)
      tag=proxybench/$p:${ver//,/.}-$(hash_of "$bin")
      case $p in
        prometheus) scratch_image "$tag" "$bin" /bin/prometheus '["/bin/prometheus"]' ;;
        *) scratch_image "$tag" "$bin" "/usr/local/bin/$p" ;;
      esac
      echo "$(echo "$p" | tr a-z A-Z)_IMAGE=$tag"
    done
    job_wait base || exit 1
    base=$(job_out base | tail -1)
    for alias in nginx:1.22-debian12 haproxy:2.6-debian12 node:18-debian12 python:3.11-debian12; do
      docker tag "$base" "proxybench/$alias"
    done
    echo "NGINX_IMAGE=proxybench/nginx:1.22-debian12"
    echo "HAPROXY_IMAGE=proxybench/haproxy:2.6-debian12"
    echo "NODE_BASE=proxybench/node:18-debian12"
    echo "PYTHON_BASE=proxybench/python:3.11-debian12"
  fi
  # Node and python origins: one Dockerfile each, base image chosen above.
  for o in node python; do
    b=$( [ "$offline" = 1 ] && { [ $o = node ] && echo proxybench/node:18-debian12 || echo proxybench/python:3.11-debian12; } ||
         { [ $o = node ] && echo node:18-bookworm-slim || echo python:3.11-slim-bookworm; } )
    tag=proxybench/origin-$o:$(printf '%s %s' "$b" "$(hash_of origins/$o/*)" | sha256sum | cut -c1-12)
    if ! docker image inspect "$tag" >/dev/null 2>&1; then
      DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE=$b" -t "$tag" "origins/$o" >/dev/null
      say "built $tag"
    fi
    docker tag "$tag" "proxybench/origin-$o:dev"
    echo "ORIGIN_$(echo $o | tr a-z A-Z)_IMAGE=$tag"
  done
  echo "OFFLINE=$offline"
} >"$ENVF.tmp.$$"
mv "$ENVF.tmp.$$" "$ENVF" # a name of its own: make test runs two of these at once
say "images ready ($ENVF)"
