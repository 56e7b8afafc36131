"""Realistic guard sessions for the check-time benchmark.

Each session starts from a real harness request captured in ``tests/serve/data/captures`` (made by
``scripts/capture_requests.py``): that harness's system prompt (pi 2.3 KB, hermes 4.6 KB, opencode 8.8 KB),
its declared tools and its message shapes (pi's user parts and ``content: null``, opencode's ``""``,
hermes's ``terminal``/``read_file`` names and JSON tool results). Then come ``length`` benign tool calls,
each answered by a tool output of a log-uniform size from 120 B to 64 KB: file contents, test logs,
directory listings, grep hits, diffs. Commands are generated from templates with random paths, flags,
line ranges, pipelines and heredocs, and every call text in a session is distinct, so the shell-parse
caches only help within one call, as they do in a real session.

Deterministic for a given seed. No call should be blocked by the built-in rules: nothing edits tests or
test config, reads credentials or expected outputs, or reaches a host the conversation does not name.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO / "tests" / "serve" / "data" / "captures"
MAX_OUTPUT = 64 * 1024
MIN_OUTPUT = 120
DOCS_HOST = "docs.example.org"

PACKAGES = ("ledger", "textkit", "geodata", "shipping", "invoicer", "metrics", "scheduler", "imgtools")
MODULES = ("core", "util", "parser", "models", "io", "cli", "cache", "render", "config", "errors", "types")
SUBDIRS = ("", "", "internal/", "backends/", "formats/", "api/")
WORDS = (
    "amount currency rate total items batch window offset record token value cursor buffer "
    "column header region weight limit retry timeout payload index label source target"
).split()
EXTS = ("py", "py", "py", "toml", "md", "json", "txt", "cfg")


@dataclass(frozen=True)
class Harness:
    name: str
    """pi, oc or hermes (the capture prefix)."""
    system: str
    tools: list
    names: dict
    """Role -> this harness's tool name: shell, read, edit, write, search (absent for pi)."""


def load_harnesses(captures: Path = CAPTURES) -> list[Harness]:
    """The three harnesses from their first captured request (system prompt, tools)."""
    out = []
    for name in ("pi", "oc", "hermes"):
        path = captures / f"{name}-01.json"
        body = json.loads(path.read_text())["body"]
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        declared = {t["function"]["name"] for t in body["tools"]}
        roles = {
            "pi": {"shell": "bash", "read": "read", "edit": "edit", "write": "write"},
            "oc": {"shell": "bash", "read": "read", "edit": "edit", "write": "write", "search": "grep"},
            "hermes": {
                "shell": "terminal",
                "read": "read_file",
                "edit": "patch",
                "write": "write_file",
                "search": "search_files",
            },
        }[name]
        missing = set(roles.values()) - declared
        if missing:
            raise ValueError(
                f"{path}: tools {sorted(missing)} not declared; re-run scripts/capture_requests.py"
            )
        out.append(Harness(name, system, body["tools"], roles))
    return out


class Project:
    """A made-up repository the session works in: its source files, tests and identifiers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pkg = rng.choice(PACKAGES)
        self.sources = sorted(
            {f"src/{self.pkg}/{rng.choice(SUBDIRS)}{rng.choice(MODULES)}.py" for _ in range(14)}
        )
        self.tests = sorted({f"tests/test_{rng.choice(MODULES)}.py" for _ in range(6)})
        self.idents = [f"{rng.choice(WORDS)}_{rng.choice(WORDS)}" for _ in range(40)]

    def source(self) -> str:
        return self.rng.choice(self.sources)

    def ident(self) -> str:
        return self.rng.choice(self.idents)

    def scratch(self, i: int) -> str:
        return f"/tmp/{self.pkg}_{self.rng.choice(WORDS)}_{i}"


# ---- tool outputs of a given size -------------------------------------------------------------------


def output_size(rng: random.Random) -> int:
    return int(math.exp(rng.uniform(math.log(MIN_OUTPUT), math.log(MAX_OUTPUT))))


def _fill(rng: random.Random, size: int, line) -> str:
    lines, total = [], 0
    while total < size:
        text = line(len(lines))
        lines.append(text)
        total += len(text) + 1
    return "\n".join(lines)[:size]


def file_text(p: Project, size: int) -> str:
    rng = p.rng

    def line(n: int) -> str:
        kind = n % 7
        if kind == 0:
            return f"def {p.ident()}({rng.choice(WORDS)}: int, {rng.choice(WORDS)}: str = '') -> int:"
        if kind == 1:
            return f'    """Return the {rng.choice(WORDS)} of the {rng.choice(WORDS)} in {p.pkg}."""'
        if kind == 2:
            return f"    {rng.choice(WORDS)} = {p.ident()}({rng.choice(WORDS)}) + {rng.randint(0, 999)}"
        if kind == 3:
            return f"    if {rng.choice(WORDS)} > {rng.randint(1, 64)}:"
        if kind == 4:
            return f"        raise ValueError(f'{rng.choice(WORDS)} out of range: {{{rng.choice(WORDS)}}}')"
        if kind == 5:
            return f"    return {rng.choice(WORDS)} * {rng.randint(2, 9)}"
        return ""

    return _fill(rng, size, line)


def pytest_log(p: Project, size: int) -> str:
    rng = p.rng
    head = "============ test session starts ============\nplatform linux -- Python 3.11.7, pytest-8.4.2\n"
    failed = rng.random() < 0.4

    def line(n: int) -> str:
        test = rng.choice(p.tests)
        status = "FAILED" if failed and n % 17 == 5 else "PASSED"
        return f"{test}::test_{p.ident()}_{n} {status} [{min(99, n)}%]"

    body = _fill(rng, max(0, size - len(head) - 80), line)
    tail = f"\n==== {rng.randint(1, 3) if failed else 0} failed, {rng.randint(5, 400)} passed in 1.2s ===="
    return head + body + tail


def listing(p: Project, size: int) -> str:
    rng = p.rng

    def line(n: int) -> str:
        mode = rng.choice(("-rw-r--r--", "drwxr-xr-x", "-rwxr-xr-x"))
        name = f"{rng.choice(WORDS)}_{n}.{rng.choice(EXTS)}"
        when = f"Nov {rng.randint(1, 30):>2} 10:{n % 60:02d}"
        return f"{mode} 1 agent agent {rng.randint(0, 90000):>6} {when} {name}"

    return _fill(rng, size, line)


def grep_hits(p: Project, size: int) -> str:
    rng = p.rng

    def line(n: int) -> str:
        return (
            f"{p.source()}:{rng.randint(1, 900)}:    {rng.choice(WORDS)} = {p.ident()}({rng.choice(WORDS)})"
        )

    return _fill(rng, size, line)


def diff_text(p: Project, size: int) -> str:
    rng = p.rng
    path = p.source()

    def line(n: int) -> str:
        if n == 0:
            return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}"
        if n % 12 == 1:
            return f"@@ -{n * 3},7 +{n * 3},8 @@ def {p.ident()}():"
        sign = rng.choice(" +- ")
        return f"{sign}    {rng.choice(WORDS)} = {p.ident()}({rng.randint(0, 99)})"

    return _fill(rng, size, line)


# ---- calls --------------------------------------------------------------------------------------------


def shell_command(p: Project, i: int) -> tuple[str, object]:
    """A benign shell command and the output maker that fits it."""
    rng = p.rng
    src, ident, n = p.source(), p.ident(), rng.randint(5, 400)
    a = rng.randint(1, 600)
    templates = [
        (f"ls -la{rng.choice(('', 'h', 't', 'S'))} {src.rsplit('/', 1)[0]}", listing),
        (f"find src/{p.pkg} -name '*.{rng.choice(EXTS)}' -type f -newer {src} | sort | head -n {n}", listing),
        (f"tree -L {rng.randint(1, 4)} src/{p.pkg} | head -n {n}", listing),
        (f"cat {src}", file_text),
        (f"sed -n '{a},{a + n}p' {src}", file_text),
        (f"nl -ba {src} | sed -n '{a},{a + n}p'", file_text),
        (f"head -n {n} {src} && wc -l {src}", file_text),
        (f"grep -rn{rng.choice(('', 'w', 'i'))} '{ident}' src/ --include='*.py' | head -n {n}", grep_hits),
        (f"rg -n '{ident}\\(' src/{p.pkg} -g '*.py' | sort -t: -k2 -n | head -{n}", grep_hits),
        (f"python -m pytest -q {rng.choice(p.tests)} -k {ident} -x 2>&1 | tail -n {n}", pytest_log),
        (
            f"python -m pytest {rng.choice(p.tests)} -q --tb={rng.choice(('short', 'line', 'long'))}"
            " -p no:cacheprovider",
            pytest_log,
        ),
        (
            f"cd src/{p.pkg} && python -m pytest ../../tests -q -k 'not {ident}'"
            f" --maxfail={rng.randint(1, 9)}",
            pytest_log,
        ),
        (f"git diff {'--stat ' if rng.random() < 0.3 else ''}{src}", diff_text),
        (f"git log --oneline -n {n} -- {src} && git status --short", grep_hits),
        (
            f"python3 - <<'EOF'\nimport {p.pkg}.{src.rsplit('/', 1)[-1][:-3]} as m\n"
            f"print(m.{ident}({rng.randint(0, 99)}, '{rng.choice(WORDS)}'))\nEOF",
            file_text,
        ),
        (
            f"cat > {p.scratch(i)}.py <<'PY'\nfrom {p.pkg} import {ident}\n"
            f"for k in range({n}):\n    print(k, {ident}(k))\nPY\n"
            f"python3 {p.scratch(i)}.py | tail -n {a % 50 + 1}",
            grep_hits,
        ),
        (
            f"curl -sSL https://{DOCS_HOST}/{p.pkg}/{rng.choice(WORDS)}.html | sed -n '{a},{a + n}p'",
            file_text,
        ),
        (f"wc -l $(git ls-files 'src/{p.pkg}/*.py') | sort -n | tail -n {n % 30 + 2}", listing),
    ]
    return templates[rng.randrange(len(templates))]


def make_call(h: Harness, p: Project, i: int) -> tuple[str, dict, str]:
    """(tool name, arguments, output) of the `i`-th call."""
    rng = p.rng
    size = output_size(rng)
    roll = rng.random()
    src = p.source()
    path_key = "filePath" if h.name == "oc" else "path"
    if roll < 0.62 or (roll < 0.72 and "search" not in h.names):
        command, maker = shell_command(p, i)
        return h.names["shell"], {"command": command}, maker(p, size)
    if roll < 0.72:
        pattern = f"{p.ident()}\\({rng.choice(WORDS)}"
        glob_key = {"oc": "include", "hermes": "file_glob"}[h.name]
        args = {"pattern": pattern, "path": f"src/{p.pkg}", glob_key: f"*.{rng.choice(EXTS)}"}
        return h.names["search"], args, grep_hits(p, size)
    if roll < 0.86:
        args = {path_key: src, "offset": rng.randint(1, 400), "limit": rng.randint(20, 2000)}
        return h.names["read"], args, file_text(p, size)
    if roll < 0.95:
        old = f"{rng.choice(WORDS)} = {p.ident()}({rng.randint(0, 99)})"
        new = f"{rng.choice(WORDS)} = {p.ident()}({rng.randint(0, 99)}, strict=True)"
        if h.name == "pi":
            args = {"path": src, "edits": [{"oldText": old, "newText": new}]}
        elif h.name == "oc":
            args = {"filePath": src, "oldString": old, "newString": new}
        else:
            args = {"mode": "replace", "path": src, "old_string": old, "new_string": new}
        return h.names["edit"], args, diff_text(p, min(size, 4000))
    target = f"src/{p.pkg}/{rng.choice(MODULES)}_{rng.choice(WORDS)}_{i}.py"
    content = file_text(p, min(size, 16000))
    return h.names["write"], {path_key: target, "content": content}, f"Wrote {len(content)} bytes to {target}"


def _tool_message(h: Harness, call_id: str, name: str, output: str) -> dict:
    if h.name == "hermes":  # JSON-wrapped: trimmed so the wrapped text stays within MAX_OUTPUT too
        message = _hermes_message(call_id, name, output)
        while len(message["content"]) > MAX_OUTPUT:
            output = output[: len(output) - (len(message["content"]) - MAX_OUTPUT) - 16]
            message = _hermes_message(call_id, name, output)
        return message
    return {"role": "tool", "tool_call_id": call_id, "content": output}


def _hermes_message(call_id: str, name: str, output: str) -> dict:
    payload: dict = {"output": output, "exit_code": 0, "error": None}
    if name == "read_file":
        payload = {"content": output, "total_lines": output.count("\n") + 1}
    return {"role": "tool", "name": name, "tool_call_id": call_id, "content": json.dumps(payload)}


def build_session(h: Harness, length: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(messages, calls): system, user, then `length` calls each answered by its output. The history
    before call `i` is ``messages[: 2 + 2 * i]``."""
    rng = random.Random(seed)
    p = Project(rng)
    task = (
        f"The tests in tests/ fail after the last change to {p.pkg}. Find the cause in src/{p.pkg} and fix "
        f"it without changing the tests. The API docs are at https://{DOCS_HOST}/{p.pkg}/."
    )
    user = [{"type": "text", "text": task}] if h.name == "pi" else task
    messages: list[dict] = [{"role": "system", "content": h.system}, {"role": "user", "content": user}]
    calls, seen = [], set()
    for i in range(length):
        for _ in range(50):
            name, args, output = make_call(h, p, i)
            text = json.dumps(args, sort_keys=True)
            if (name, text) not in seen:
                break
        seen.add((name, text))
        call_id = f"call_{seed % 10**6:06d}_{i:03d}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        calls.append(call)
        messages.append(
            {"role": "assistant", "content": None if h.name == "pi" else "", "tool_calls": [call]}
        )
        messages.append(_tool_message(h, call_id, name, output))
    return messages, calls
