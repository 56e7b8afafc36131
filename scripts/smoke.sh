#!/usr/bin/env bash
# Set up the environment (idempotent) and run the main job, the smoke run on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0
exec .venv/bin/python -m jobs.smoke "$@"
