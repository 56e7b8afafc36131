#!/usr/bin/env bash
# Install and start what the sandbox backends need, idempotently: bubblewrap for the local backend, a
# Docker engine of our own (socket under $HA_DOCKER_ROOT) and the sandbox base image, built locally from
# a debootstrap root file system because no image registry is reachable. Needs root for apt-get and
# dockerd; elsewhere it says what it skipped and the sandbox tests skip with their reasons.
#
#   source scripts/sandbox-deps.sh     # also exports DOCKER_HOST for the tests
set -uo pipefail
HA_DOCKER_ROOT=${HA_DOCKER_ROOT:-/tmp/hsbx-docker}
BASE_IMAGE=harness-adapters/debian-base:bookworm

_sandbox_deps() {
  if [[ $(id -u) != 0 ]]; then
    echo "sandbox-deps: not root, skipping bubblewrap/Docker set-up (sandbox tests will skip)"
    return 0
  fi
  local need=()
  command -v bwrap >/dev/null || need+=(bubblewrap)
  command -v dockerd >/dev/null || need+=(docker.io)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v strace >/dev/null || need+=(strace)  # the harness tests prove they only reach the guard
  if ((${#need[@]})); then
    echo "sandbox-deps: installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || {
      echo "sandbox-deps: apt-get failed; sandbox tests will skip"; return 0; }
  fi
  mkdir -p "$HA_DOCKER_ROOT"
  export DOCKER_HOST="unix://$HA_DOCKER_ROOT/docker.sock"
  if ! docker info >/dev/null 2>&1; then
    echo "sandbox-deps: starting dockerd (data in $HA_DOCKER_ROOT)"
    nohup dockerd --data-root "$HA_DOCKER_ROOT/data" --host "$DOCKER_HOST" --exec-root "$HA_DOCKER_ROOT/exec" \
      --pidfile "$HA_DOCKER_ROOT/dockerd.pid" --iptables=false --ip6tables=false --bridge=none \
      >"$HA_DOCKER_ROOT/dockerd.log" 2>&1 &
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "sandbox-deps: dockerd did not start (see $HA_DOCKER_ROOT/dockerd.log)"; return 0; }
  fi
  # pip in the base: the stand-ins for python:3.11* task images (environments/sandboxes/bases.py) need it.
  if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 &&
    ! docker run --rm --network none "$BASE_IMAGE" python3 -m pip --version >/dev/null 2>&1; then
    echo "sandbox-deps: $BASE_IMAGE has no pip; rebuilding it"
    docker image rm -f "$BASE_IMAGE" >/dev/null
  fi
  if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    # The mirror this machine's apt already uses: nothing else is reachable.
    local mirror suite
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
    [[ -n $mirror ]] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    suite=bookworm
    echo "sandbox-deps: building $BASE_IMAGE with debootstrap (about a minute)"
    rm -rf "$HA_DOCKER_ROOT/rootfs"
    debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,python3-pytest,nodejs "$suite" "$HA_DOCKER_ROOT/rootfs" \
      "$mirror" >"$HA_DOCKER_ROOT/debootstrap.log" 2>&1 || {
      echo "sandbox-deps: debootstrap failed (see $HA_DOCKER_ROOT/debootstrap.log)"; return 0; }
    tar -C "$HA_DOCKER_ROOT/rootfs" -c . | docker import - "$BASE_IMAGE" >/dev/null
    rm -rf "$HA_DOCKER_ROOT/rootfs"
  fi
  echo "sandbox-deps: ok (bwrap $(bwrap --version | awk '{print $2}'), DOCKER_HOST=$DOCKER_HOST)"
}
_sandbox_deps || echo "sandbox-deps: set-up failed; sandbox tests will skip"
