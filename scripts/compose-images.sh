#!/usr/bin/env bash
# Makes sure the base images that docker/Dockerfile and docker/docker-compose.yml
# name are in the local Docker engine: each is kept if present, else pulled,
# else (no registry reachable, as on CI here) built as a stand-in from
# Debian's packages: debootstrap minbase + docker import, then the small
# Dockerfiles of docker/standins (whose README says what each stands in for).
# Grafana has no Debian package and so no stand-in: the script says so, and
# make compose-test runs the cluster without it.
# Env: DOCKER (default docker), BELUGA_STANDIN_CACHE (the debootstrap root's
# tarball, default /var/cache/beluga-standins), DEBIAN_MIRROR.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
DOCKER="${DOCKER:-docker}"
cache="${BELUGA_STANDIN_CACHE:-/var/cache/beluga-standins}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
go_version="$(awk '/^go [0-9]/ { split($2, v, "."); print v[1] "." v[2] }' "$here/go.mod")"

have() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
pull() { timeout 60 "$DOCKER" pull -q "$1" >/dev/null 2>&1; }
say() { echo "compose-images: $*" >&2; }

# ensure NAME BUILDER: keeps, pulls or builds NAME; returns 1 when none works.
ensure() {
  local name="$1" builder="$2"
  if have "$name"; then return 0; fi
  if pull "$name"; then say "pulled $name"; return 0; fi
  if [ -z "$builder" ]; then say "$name: not present, cannot be pulled, and has no stand-in"; return 1; fi
  say "$name cannot be pulled: building a stand-in from Debian's packages"
  local t0=$SECONDS
  "$builder" "$name"
  say "stand-in $name built in $((SECONDS - t0)) s"
}

build_debian() {
  local tar="$cache/bookworm-minbase.tar"
  if [ ! -s "$tar" ]; then
    command -v debootstrap >/dev/null || { say "debootstrap is missing (scripts/deps.sh installs it)"; exit 1; }
    local root; root="$(mktemp -d /var/tmp/beluga-rootfs.XXXXXX)"
    debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
    # Package scripts must not start services inside an image build.
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"; chmod 0755 "$root/usr/sbin/policy-rc.d"
    # As the official image: no documentation, no apt caches.
    printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' \
      > "$root/etc/dpkg/dpkg.cfg.d/excludes"
    chroot "$root" apt-get clean
    rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
    mkdir -p "$cache"
    tar -C "$root" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$root"
  fi
  "$DOCKER" import --change 'CMD ["bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'LABEL org.beluga.stand-in="debian:bookworm-slim from debootstrap minbase"' \
    "$tar" "$1" >/dev/null
}

build_dir() { # NAME DIR [extra context setup]
  "$DOCKER" build -q --network host -t "$1" "$2" >/dev/null
}
build_zookeeper() { build_dir "$1" "$here/docker/standins/zookeeper"; }
build_mysql() { build_dir "$1" "$here/docker/standins/mysql"; }
build_prometheus() { build_dir "$1" "$here/docker/standins/prometheus"; }
build_golang() {
  local ctx; ctx="$(mktemp -d /var/tmp/beluga-golang.XXXXXX)"
  cp "$here/docker/standins/golang/Dockerfile" "$ctx/"
  mkdir -p "$ctx/extra-ca"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/extra-ca/" 2>/dev/null || true
  cp -a "$(go env GOROOT)" "$ctx/go"
  rm -rf "$ctx/go/pkg/obj" "$ctx/go/test" "$ctx/go/doc"
  "$DOCKER" build -q --network host -t "$1" "$ctx" >/dev/null
  rm -rf "$ctx"
}

ensure debian:bookworm-slim build_debian
ensure "golang:${go_version}-bookworm" build_golang
ensure zookeeper:3.9 build_zookeeper
ensure mysql:8.4 build_mysql
ensure prom/prometheus:v2.53.0 build_prometheus
if ! ensure grafana/grafana:11.1.0 ""; then
  say "grafana/grafana:11.1.0 is unavailable: the cluster runs without Grafana here"
  exit 3
fi
