#!/usr/bin/env bash
# Set up the environment (idempotent) and run the test suite's CI tier: everything except `slow` tests (the
# main job end to end, the trainers, the tiny agent's build and what needs it:
# `scripts/test.sh -m "slow and not cluster"`),
# `gpu` tests (they skip themselves without CUDA anyway) and `cluster` tests (`scripts/test.sh -m cluster
# tests/cluster`, as root). Extra arguments go to pytest (a later -m replaces the default selection).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# shellcheck source=sandbox-deps.sh
source scripts/sandbox-deps.sh
# The real pi, opencode and hermes (pinned) for the `harness` tests; they skip if this fails.
scripts/harness-deps.sh || echo "harness-deps: install failed; harness tests will skip"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 TRL_EXPERIMENTAL_SILENCE=1
exec .venv/bin/python -m pytest -m "not gpu and not cluster and not slow" -p no:cacheprovider "$@"
