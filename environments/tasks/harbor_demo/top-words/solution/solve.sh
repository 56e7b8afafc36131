#!/bin/bash
cat > /app/top_words.py <<'PY'
"""Print the N most frequent words of a file, skipping stop words."""

import re
import sys
from collections import Counter

STOP = set(open("/usr/share/stopwords/en.txt").read().split())
words = [w for w in re.findall(r"[a-z]+", open(sys.argv[1]).read().lower()) if w not in STOP]
for word, count in sorted(Counter(words).items(), key=lambda item: (-item[1], item[0]))[: int(sys.argv[2])]:
    print(word, count)
PY
