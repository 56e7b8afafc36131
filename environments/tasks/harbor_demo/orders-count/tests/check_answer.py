"""Exit 0 iff the answer file holds the expected whole number."""

import sys

try:
    got = int(open(sys.argv[1]).read().strip().rstrip("."))
except (OSError, ValueError) as exc:
    sys.exit(f"no usable answer: {exc}")
want = int(open(sys.argv[2]).read())
print(f"answer {got}, expected {want}")
sys.exit(0 if got == want else 1)
