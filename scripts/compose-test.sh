#!/usr/bin/env bash
# make compose-test: builds the image from this checkout and runs
# docker/docker-compose.yml as shipped under tests/compose (the README's
# first workflow and every example on the cluster, the leader and a worker
# killed during runs, Prometheus' targets, state across down/up), then tears
# it down. It starts a Docker engine when none answers, writes the compose
# secrets when missing, and builds stand-ins of base images no registry
# serves (scripts/compose-images.sh). Prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
t0=$SECONDS

if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "compose-test: no Docker engine and no dockerd (scripts/deps.sh installs docker.io)" >&2
    exit 1
  fi
  echo "compose-test: no Docker engine answers: starting dockerd (log in /tmp/beluga-dockerd.log)"
  nohup dockerd >/tmp/beluga-dockerd.log 2>&1 &
  for _ in $(seq 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null
fi

./scripts/compose-secrets.sh
set +e
./scripts/compose-images.sh
rc=$?
set -e
case $rc in
  0) ;;
  3) export BELUGA_COMPOSE_NO_GRAFANA=1 ;;
  *) exit "$rc" ;;
esac
echo "compose-test: base images ready after $((SECONDS - t0)) s"

# The image: by default the Dockerfile's runtime stage around a static binary
# built here from the same checkout (the host's Go build cache makes it
# quick); BUILD=full builds it all in the Dockerfile's Go stage, as a user's
# `docker compose up --build` does (some minutes more on two cores).
t1=$SECONDS
if [ "${BUILD:-prebuilt}" = full ]; then
  docker build --network host -q -f docker/Dockerfile -t beluga:dev . >/dev/null
else
  mkdir -p .compose-bin
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o .compose-bin/beluga ./cmd/beluga
  docker build --network host -q --target prebuilt -f docker/Dockerfile -t beluga:dev . >/dev/null
fi
echo "compose-test: beluga:dev built in $((SECONDS - t1)) s, $(docker image inspect -f '{{.Size}}' beluga:dev | awk '{ printf "%.0f MB", $1 / 1e6 }')"

t2=$SECONDS
go test -tags compose -count=1 -v -timeout 40m ./tests/compose/
echo "compose-test: the cluster test took $((SECONDS - t2)) s; all of compose-test $((SECONDS - t0)) s"
