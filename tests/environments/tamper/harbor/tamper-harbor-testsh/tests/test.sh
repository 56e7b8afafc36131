#!/bin/bash
# Harbor verifier: run the check script against the agent's /app/roman.py and write the reward.
mkdir -p /logs/verifier
cd /app || exit 1
# The reward needs the check script's own last line, not just its exit status; the script runs roman.py in a
# child and reads only JSON from it, so a roman.py that prints that line and exits 0 cannot pass.
out=$(python3 /tests/check_roman.py)
status=$?
echo "$out"
if [ "$status" -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "ALL ROMAN CHECKS PASSED" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
