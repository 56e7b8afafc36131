#!/usr/bin/env bash
# Set up the environment (idempotent) and run the main job, the smoke run on the embedded default:
# the Python environment, the pinned harnesses (pi, opencode, hermes) and, as root, bubblewrap for the
# sandbox; then python -m jobs.smoke (extra arguments: key=value overrides of jobs/configs/smoke.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
# Bubblewrap (apt) and the harnesses (npm, and hermes' own venv) install beside the project's environment:
# they are independent of it and mostly wait on downloads.
if ! command -v bwrap >/dev/null && [[ $(id -u) != 0 ]]; then
  echo "smoke: bubblewrap (bwrap) is missing and this is not root: sudo apt-get install -y bubblewrap" >&2
  exit 1
fi
harness_log=$(mktemp)
{
  if ! command -v bwrap >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; } ||
      { echo "smoke: apt-get could not install bubblewrap"; exit 1; }
  fi
  scripts/harness-deps.sh
} >"$harness_log" 2>&1 &
harness_pid=$!
scripts/setup.sh
if ! wait "$harness_pid"; then
  cat "$harness_log" >&2
  echo "smoke: installing bubblewrap or the harnesses failed (above); rerun scripts/harness-deps.sh to see it" >&2
  exit 1
fi
cat "$harness_log" && rm -f "$harness_log"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 TRL_EXPERIMENTAL_SILENCE=1
exec .venv/bin/python -m jobs.smoke "$@"
