#!/bin/bash
# Harbor verifier: run the check script against the agent's /app/roman.py and write the reward.
mkdir -p /logs/verifier
cd /app || exit 1
if python3 /tests/check_roman.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
