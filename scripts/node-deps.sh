#!/usr/bin/env bash
# Node.js >= 20.6 for pi (opencode's launcher and npm installs run on it too). Nothing happens when the node
# on PATH is new enough; otherwise Node 22, the maintained LTS line (20 reached its end of life in April
# 2026), is installed from NodeSource's signed apt repository (Debian and Ubuntu, as in the Ray images).
# cluster.yaml runs it on every node before scripts/harness-deps.sh.
#
#   scripts/node-deps.sh                  check, install if needed, print the version
#   scripts/node-deps.sh --check 20.5.1   exit 0 when that version is new enough (no install)
set -euo pipefail

NEED_MAJOR=20
NEED_MINOR=6
NODE_LINE=22

new_enough() {  # VERSION (v20.6.0 or 20.6.0)
  local version=${1#v} major minor
  major=${version%%.*}
  minor=${version#*.}
  minor=${minor%%.*}
  [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 1
  ((major > NEED_MAJOR || (major == NEED_MAJOR && minor >= NEED_MINOR)))
}

if [[ ${1:-} == --check ]]; then
  new_enough "${2:?--check needs a version}"
  exit $?
fi

if command -v node >/dev/null 2>&1 && new_enough "$(node --version)"; then
  echo "node-deps: node $(node --version) is new enough"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "node-deps: node >= $NEED_MAJOR.$NEED_MINOR is needed and this is not a Debian/Ubuntu system:" \
    "install Node.js $NODE_LINE from https://nodejs.org and rerun" >&2
  exit 1
fi
SUDO=""
[[ $(id -u) == 0 ]] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq ca-certificates curl gnupg >/dev/null
$SUDO mkdir -p /etc/apt/keyrings
curl -fsSL https://deb.nodesource.com/gpgkey/nodesource-repo.gpg.key |
  $SUDO gpg --dearmor --yes -o /etc/apt/keyrings/nodesource.gpg
echo "deb [signed-by=/etc/apt/keyrings/nodesource.gpg] https://deb.nodesource.com/node_$NODE_LINE.x nodistro main" |
  $SUDO tee /etc/apt/sources.list.d/nodesource.list >/dev/null
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq nodejs >/dev/null
if ! new_enough "$(node --version)"; then
  echo "node-deps: node $(node --version) is still older than $NEED_MAJOR.$NEED_MINOR" >&2
  exit 1
fi
echo "node-deps: installed node $(node --version)"
