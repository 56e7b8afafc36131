#!/usr/bin/env bash
# Install the pinned coding-agent harnesses into .harnesses/ (idempotent): pi and opencode from npm,
# hermes from PyPI into its own venv. A stamp file holding the hash of this script makes a second run a
# quick check. Without node/npm or python3 >= 3.11 it says what it skipped, and the `harness` tests skip
# with that reason.
#
#   scripts/harness-deps.sh            install (or check) and print versions
#   HA_HARNESSES=/path scripts/harness-deps.sh   install somewhere else
set -euo pipefail
cd "$(dirname "$0")/.."

PI_VERSION=0.73.1
OPENCODE_VERSION=1.18.33
HERMES_VERSION=0.19.0
DEST=${HA_HARNESSES:-$PWD/.harnesses}
PY=${PYTHON:-python3}

stamp_now=$(sha256sum "$0" | cut -c1-16)
stamp_file=$DEST/.stamp

print_versions() {
  echo "harness-deps: pi $("$DEST/pi/node_modules/.bin/pi" --version 2>&1 | tail -n1)"
  echo "harness-deps: opencode $("$DEST/opencode/node_modules/opencode-linux-x64/bin/opencode" --version 2>&1 | tail -n1)"
  echo "harness-deps: hermes $("$DEST/hermes-venv/bin/python" -c \
    'import importlib.metadata as m; print(m.version("hermes-agent"))')"
}

if [[ -f $stamp_file && "$(cat "$stamp_file")" == "$stamp_now" ]]; then
  echo "harness-deps: $DEST is up to date"
  print_versions
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "harness-deps: npm not found, skipping (harness tests will skip)"
  exit 0
fi
if ! "$PY" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' 2>/dev/null; then
  echo "harness-deps: hermes needs python 3.11-3.13 ($PY is not), skipping (harness tests will skip)"
  exit 0
fi

mkdir -p "$DEST"
start=$(date +%s)
npm_install() { # prefix, package@version
  npm install --prefix "$DEST/$1" --no-audit --no-fund --loglevel=error "$2" >/dev/null
}
echo "harness-deps: installing pi $PI_VERSION, opencode $OPENCODE_VERSION, hermes $HERMES_VERSION into $DEST"
npm_install pi "@mariozechner/pi-coding-agent@$PI_VERSION" &
pi_pid=$!
# opencode ships a self-contained binary in this package; opencode-ai would pull two 177 MB copies.
npm_install opencode "opencode-linux-x64@$OPENCODE_VERSION" &
oc_pid=$!
[[ -x $DEST/hermes-venv/bin/python ]] || "$PY" -m venv "$DEST/hermes-venv"
"$DEST/hermes-venv/bin/python" -m pip install -qq --disable-pip-version-check "hermes-agent==$HERMES_VERSION"
wait "$pi_pid"
wait "$oc_pid"

print_versions
echo "harness-deps: done in $(($(date +%s) - start)) s, $(du -sh "$DEST" | cut -f1) in $DEST"
echo "$stamp_now" >"$stamp_file"
