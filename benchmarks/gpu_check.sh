#!/usr/bin/env bash
# The trainer-memory benchmark on one H200, about 4-5 minutes (each run capped by `timeout`, 6 at most).
# Needs python3 with torch (CUDA), transformers, peft and pyyaml; installs nothing. Run from the repo root:
#   OUT=<folder> bash benchmarks/gpu_check.sh
# lfm3-1.7b steps at its own token budget (65,536); twil-8b at 32,768 (its 65,536 takes ~4x the attention
# time of a step). Each run prints its rows as they finish; its last line is one JSON object.
set -o pipefail
OUT=${OUT:-artifacts/gpu-check}
mkdir -p "$OUT"
nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.txt"
status=0
run() {
  local limit=$1
  shift
  PYTHONUNBUFFERED=1 timeout "$limit" python3 benchmarks/trainer_memory.py --device cuda "$@" 2>&1 \
    | tee -a "$OUT/trainer_memory.log" || status=$?
}
run 200 --presets lfm3-1.7b
run 140 --presets twil-8b --tokens 32768
grep '^{' "$OUT/trainer_memory.log" > "$OUT/trainer_memory.jsonl"
exit $status
