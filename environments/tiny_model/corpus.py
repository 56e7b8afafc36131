"""Deterministic training text for the tiny model's tokenizer, shaped like agent traffic.

No dataset hub is reachable, so the text is generated: the three harnesses' real system prompts and tool
schemas, rendered chat turns with ``<tool_call>`` blocks, Python modules and their tests, shell sessions,
JSON tool arguments and tool output (pytest runs, tracebacks, CSV rows). Everything comes from a seeded
``random.Random`` and fixed word lists, so the same seed gives the same text on every machine.
Bump ``CORPUS_VERSION`` whenever the generator changes: the model cache keys on it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from environments.harness_prompts import HARNESSES
from environments.harness_prompts import harness_request as _as_stored

CORPUS_VERSION = 1

_NOUNS = (
    "user order item price total count name path file line value result config record task score "
    "session token request response table column row index cache queue worker batch step event "
    "report metric sample label dataset frame series date amount region product customer status"
).split()
_VERBS = (
    "get set load save parse build check compute update merge filter sort count find read write "
    "clean split join format validate render fetch apply normalize group summarize convert"
).split()
_WORDS = (
    "the a an of to in is it that for on with as this be are by from or not at which have has "
    "run test fix bug error file function should return value when if then else use add remove "
    "change make sure all tests pass please answer question data column mean median total rows "
    "repository code module import install command output tool call result directory workspace"
).split()
_SHELL = (
    "ls -la",
    "pwd",
    "cat {f}",
    "head -n 20 {f}",
    "tail -n 50 {f}",
    'grep -rn "{w}" .',
    "python -m pytest -q",
    "python -m pytest tests/test_{n}.py -x -q",
    "python {f}",
    "git status",
    "git diff",
    "git log --oneline -5",
    "find . -name '*.py' | head",
    "wc -l {f}",
    "sed -n '1,40p' {f}",
    "python -c \"import pandas as pd; df = pd.read_csv('{n}.csv'); print(df.describe())\"",
    "pip install -r requirements.txt",
    "mkdir -p {n} && cd {n}",
    "echo $?",
    "npm test",
    "node {n}.js",
    "cat > {f} <<'EOF'\n{code}\nEOF",
    'rg -n "def {v}_{n}" src/',
    "diff -u {f} {f}.orig",
)


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"


def _sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + rng.choice([".", ".", "?", ":"])


def python_module(rng: random.Random) -> str:
    """A small, plausible Python module with a function, a class and a test."""
    fn, cls = _ident(rng), rng.choice(_NOUNS).capitalize() + rng.choice(["Store", "Parser", "Client"])
    arg, other = rng.choice(_NOUNS), rng.choice(_NOUNS)
    n = rng.randint(2, 99)
    return (
        f'"""{_sentence(rng)}"""\n\nfrom __future__ import annotations\n\n'
        "import json\nfrom pathlib import Path\n\n\n"
        f"def {fn}({arg}s: list[dict], {other}: int = {n}) -> dict[str, int]:\n"
        f'    """{_sentence(rng)}"""\n    out: dict[str, int] = {{}}\n'
        f'    for {arg} in {arg}s:\n        key = str({arg}.get("{other}", ""))\n'
        f"        if not key:\n            continue\n        out[key] = out.get(key, 0) + {n % 7 + 1}\n"
        f"    return out\n\n\nclass {cls}:\n    def __init__(self, path: Path) -> None:\n"
        f"        self.path = path\n        self._{arg}s: list[dict] = []\n\n"
        f"    def load(self) -> None:\n        with open(self.path) as fh:\n"
        f"            self._{arg}s = json.load(fh)\n\n"
        f"    def __len__(self) -> int:\n        return len(self._{arg}s)\n\n\n"
        f'def test_{fn}():\n    assert {fn}([{{"{other}": "x"}}, {{}}]) == {{"x": {n % 7 + 1}}}\n'
    )


def javascript_module(rng: random.Random) -> str:
    fn, arg = _ident(rng), rng.choice(_NOUNS)
    camel = "".join(p.capitalize() if i else p for i, p in enumerate(fn.split("_")))
    return (
        f"// {_sentence(rng)}\nconst fs = require('fs');\n\n"
        f"function {camel}({arg}s) {{\n  return {arg}s.filter((x) => x && x.{arg} !== undefined)"
        f".map((x) => ({{ ...x, score: x.{arg} * {rng.randint(2, 9)} }}));\n}}\n\n"
        f"module.exports = {{ {camel} }};\n"
    )


def shell_command(rng: random.Random) -> str:
    template = rng.choice(_SHELL)
    return template.format(
        f=f"{rng.choice(['src', 'app', 'lib', 'tests'])}/{rng.choice(_NOUNS)}.py",
        w=rng.choice(_NOUNS),
        n=rng.choice(_NOUNS),
        v=rng.choice(_VERBS),
        code=python_module(rng).split("\n\n\n")[1] if "{code}" in template else "",
    )


def tool_output(rng: random.Random) -> str:
    """Text a tool returns: test runs, tracebacks, CSV rows, listings."""
    kind = rng.randrange(4)
    if kind == 0:
        passed, failed = rng.randint(0, 40), rng.randint(0, 3)
        lines = [
            f"tests/test_{rng.choice(_NOUNS)}.py::test_{_ident(rng)} {'FAILED' if i < failed else 'PASSED'}"
            for i in range(rng.randint(2, 6))
        ]
        return "\n".join(lines) + f"\n===== {failed} failed, {passed} passed in {rng.random() * 3:.2f}s ====="
    if kind == 1:
        fn = _ident(rng)
        return (
            f'Traceback (most recent call last):\n  File "src/{rng.choice(_NOUNS)}.py", line '
            f"{rng.randint(3, 300)}, in {fn}\n    return {rng.choice(_NOUNS)}[key]\n"
            f"KeyError: '{rng.choice(_NOUNS)}'"
        )
    if kind == 2:
        cols = rng.sample(_NOUNS, 4)
        rows = [",".join(cols)]
        for _ in range(rng.randint(3, 8)):
            rows.append(
                f"{rng.randint(1, 9999)},{rng.choice(_NOUNS)},{rng.random() * 1000:.2f},"
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            )
        return "\n".join(rows)
    return "\n".join(
        f"-rw-r--r-- 1 agent agent {rng.randint(80, 90000):>6} Nov {rng.randint(1, 29):>2} "
        f"{rng.choice(_NOUNS)}.{rng.choice(['py', 'csv', 'json', 'md', 'js', 'txt'])}"
        for _ in range(rng.randint(2, 7))
    )


def _sorted_request(harness: str) -> dict:
    """The harness's captured request with every object's keys sorted: the tiny model's text does not
    follow the order a harness happens to send (and so stays the same when a capture is re-extracted)."""
    return json.loads(json.dumps(_as_stored(harness), sort_keys=True))


def tool_call_text(rng: random.Random, harness: str) -> str:
    """One assistant tool call in the chat template's ``<tool_call>`` form, in the harness's vocabulary."""
    tools = [t["function"] for t in _sorted_request(harness)["tools"]]
    tool = rng.choice(tools)
    args: dict[str, object] = {}
    for name in (
        tool.get("parameters", {}).get("required", [])
        or list(tool.get("parameters", {}).get("properties", {}))[:1]
    ):
        if name in ("command", "cmd"):
            args[name] = shell_command(rng)
        elif name in ("content",):
            args[name] = python_module(rng)
        else:
            args[name] = f"{rng.choice(['src', 'tests', 'data'])}/{rng.choice(_NOUNS)}.py"
    call = {"name": tool["name"], "arguments": args}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def corpus_documents(seed: int, documents: int = 2400) -> Iterator[str]:
    """The tokenizer's training text, one document at a time, fixed by ``seed``."""
    rng = random.Random(seed)
    for harness in HARNESSES:
        request = _sorted_request(harness)
        yield json.dumps(request, ensure_ascii=False)
        for message in request["messages"]:
            content = message.get("content")
            if isinstance(content, str) and content:
                yield content
        for tool in request["tools"]:
            yield json.dumps(tool, indent=2)
    makers = (
        lambda: python_module(rng),
        lambda: javascript_module(rng),
        lambda: "\n".join(f"$ {shell_command(rng)}" for _ in range(rng.randint(2, 6))),
        lambda: tool_output(rng),
        lambda: " ".join(_sentence(rng) for _ in range(rng.randint(1, 5))),
        lambda: tool_call_text(rng, rng.choice(HARNESSES)),
        lambda: json.dumps({"output": tool_output(rng), "exit_code": rng.choice([0, 0, 1]), "error": None}),
    )
    for _ in range(documents):
        yield rng.choice(makers)()
