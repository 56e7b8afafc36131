"""Extract each harness's real first-session request from the research captures into the repo.

The captures (``../shared/harnesses/captures``) are raw HTTP requests that pi, opencode and hermes sent to an
OpenAI-compatible endpoint. We keep one two-turn request per harness (system prompt, the harness's tool
list, a user turn, one tool call and its result) because three places need the harnesses' real prompt
shape: the tiny tokenizer's training text, the multi-LoRA benchmark's workload and, later, SFT
demonstrations. Paths of the machine the captures were taken on are replaced by neutral ones.

    python scripts/extract_harness_prompts.py [CAPTURES_DIR]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SOURCES = {"pi": "pi-compat-02.json", "opencode": "oc-cfg2-02.json", "hermes": "hermes-t2-04.json"}
VERSIONS = {"pi": "0.73.1", "opencode": "1.18.33", "hermes": "0.19.0"}
KEEP_KEYS = ("messages", "tools", "tool_choice", "max_tokens", "stream", "stream_options")
SCRUB = [
    (re.compile(r"/opt/harnesses/(?:work|workspace)/[\w.-]+"), "/workspace"),
    (re.compile(r"/opt/harnesses/hermes-home"), "/home/agent"),
    (re.compile(r"/opt/harnesses/pi/node_modules"), "/usr/lib/node_modules"),
    (re.compile(r"/opt/harnesses"), "/opt"),
]
OUT_DIR = Path(__file__).resolve().parents[1] / "environments" / "harness_prompts"


def scrub(text: str) -> str:
    for pattern, replacement in SCRUB:
        text = pattern.sub(replacement, text)
    return text


def extract(captures: Path) -> None:
    for harness, name in SOURCES.items():
        body = json.loads((captures / name).read_text())["body"]
        kept = {key: body[key] for key in KEEP_KEYS if key in body}
        record = {"harness": harness, "version": VERSIONS[harness], "source": name, "request": kept}
        text = scrub(json.dumps(record, indent=1, ensure_ascii=False))  # key order as sent: it is rendered
        (OUT_DIR / f"{harness}.json").write_text(text + "\n")
        print(f"{harness}: {len(text)} bytes from {name}")


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[2] / "shared" / "harnesses" / "captures"
    extract(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
