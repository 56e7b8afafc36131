#!/bin/bash
# Harbor verifier: run the tests against /app and write the reward to /logs/verifier from pytest's JUnit
# report (not its exit status: code that ends the process with status 0 at import must not pass).
mkdir -p /logs/verifier
cd /app || exit 1
python3 -m pytest -q -p no:cacheprovider --junitxml=/logs/verifier/junit.xml /tests/test_top_words.py
python3 /tests/reward.py /logs/verifier/junit.xml > /logs/verifier/reward.txt
