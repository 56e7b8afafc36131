#!/bin/bash
# Harbor verifier: compare /app/answer.txt with the expected count; the reward goes to /logs/verifier.
mkdir -p /logs/verifier
if python3 /tests/check_answer.py /app/answer.txt /tests/expected.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
