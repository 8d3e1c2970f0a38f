#!/usr/bin/env bash
# Installs what the test suite needs on a Debian machine when it is missing:
# MariaDB server binaries (tests start a private mariadbd unless
# BELUGA_TEST_MYSQL_DSN is set), ZooKeeper (cluster tests start a private
# server), Chromium (the web UI's browser tests drive it headless) and
# python3 (python task tests), Docker, Compose and debootstrap (make
# compose-test), PostgreSQL server binaries (sql task tests
# use the server on 127.0.0.1:5432, else initdb a private one) and Node.js
# with npm (the web UI's stale-bundle check and its unit tests), OpenSSH's
# server (Git-over-SSH tests start a private sshd) and git.
# Needs root or sudo for apt-get; prints what it does.
set -euo pipefail

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v python3 >/dev/null 2>&1 || need+=(python3-minimal) # python tasks
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql) # sql tasks
command -v npm >/dev/null 2>&1 || need+=(nodejs npm) # the web UI's build check and unit tests (Node 20+)
[ -x /usr/sbin/sshd ] || need+=(openssh-server) # Git over SSH: a private sshd serves a test repository
command -v git >/dev/null 2>&1 || need+=(git)
# make compose-test: a Docker engine, Compose (v1.29 from Debian; a v2
# plugin is used when present) and debootstrap for stand-in base images.
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "deps: installing ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d keeps the packages from starting system services: tests run
# their own private servers on free ports.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
