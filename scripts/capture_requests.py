"""Capture the chat-completions requests that the real pi, opencode and hermes send, into the repository.

A fake OpenAI-compatible endpoint on 127.0.0.1 (stdlib ``http.server``) records every request body. Its
model answers a request whose conversation has no tool result yet with one call of the harness's shell
tool (``bash``, or hermes's ``terminal``) and anything else with a final text, in the shape asked for:
SSE chunks when the body says ``stream: true`` (all three harnesses do), one JSON object otherwise. Each
harness (installed by ``scripts/harness-deps.sh``) is run once, headless, through its launcher in
``environments.harnesses`` (a fresh HOME and config under a temporary folder, the agent's cwd a small
temporary project). The chat-completions bodies land in ``tests/serve/data/captures/<h>-NN.json``
(``<h>``: pi, oc, hermes; ``NN`` the request's order in that run) with an ``INDEX.md`` naming the
versions and what each file is.

The harnesses run in a network namespace with only loopback when ``unshare -n`` works (root on Linux),
so nothing but the fake endpoint can be reached; ``--no-netns`` runs without it (the launchers still set
each harness's offline switches).

    python scripts/capture_requests.py [--out DIR] [--only pi,oc,hermes] [--no-netns]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from environments.harnesses import HermesLauncher, LaunchSpec, OpencodeLauncher, PiLauncher  # noqa: E402
from environments.harnesses.base import install_root, run_invocation  # noqa: E402

OUT = REPO / "tests" / "serve" / "data" / "captures"
MODEL = "capture-model"
INSTRUCTION = "Look at the files in this project and tell me in one sentence what it does."
COMMAND = "ls -la && head -n 40 README.md && python3 -m textstats README.md"
FINAL_TEXT = "It is a small Python package, `textstats`, that counts words and lines, with pytest tests."
SHELL_TOOLS = ("bash", "terminal")
LAUNCHERS = {"pi": PiLauncher(), "oc": OpencodeLauncher(), "hermes": HermesLauncher()}
DROP_HEADERS = {"authorization", "host", "content-length"}
PROJECT = {
    "README.md": "# textstats\n\nCount words and lines of text files.\n\n    python -m textstats FILE...\n\n"
    "Tests: `python -m pytest -q`.\n",
    "textstats/__init__.py": '"""Word and line counts."""\n\n\ndef count(text: str) -> tuple[int, int]:\n'
    "    return len(text.split()), len(text.splitlines())\n",
    "textstats/__main__.py": "import sys\n\nfrom textstats import count\n\nfor path in sys.argv[1:]:\n"
    "    words, lines = count(open(path).read())\n    print(f'{path}: {words} words, {lines} lines')\n",
    "tests/test_count.py": "from textstats import count\n\n\ndef test_count():\n"
    "    assert count('a b\\nc\\n') == (3, 2)\n",
}


class FakeModel(BaseHTTPRequestHandler):
    """Records chat-completions bodies in ``server.bodies``; answers as described in the module doc."""

    protocol_version = "HTTP/1.0"  # one request a connection; an SSE reply ends when the socket closes

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's signature
        pass

    def reply(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.gets.append(self.path)  # type: ignore[attr-defined]
        if self.path.rstrip("/").endswith("/models"):
            self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "x"}]})
        else:
            self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.endswith("/chat/completions"):
            self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        body = json.loads(raw)
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in DROP_HEADERS}
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.bodies.append({"path": self.path, "headers": headers, "body": body})  # type: ignore[attr-defined]
            n = len(self.server.bodies)  # type: ignore[attr-defined]
        message = answer(body, f"call_cap{n:02d}")
        if body.get("stream"):
            self.stream(message)
        else:
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            choice = {"index": 0, "message": message, "finish_reason": finish}
            self.reply(200, completion("chat.completion", [choice], usage=USAGE))

    def stream(self, message: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks(message):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


USAGE = {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}


def completion(kind: str, choices: list, **extra: object) -> dict:
    return {
        "id": "chatcmpl-capture",
        "object": kind,
        "created": 0,
        "model": MODEL,
        "choices": choices,
        **extra,
    }


def answer(body: dict, call_id: str) -> dict:
    """One shell-tool call while the conversation has no tool result after its last user turn, else text."""
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    answered = any(m.get("role") == "tool" for m in messages[last_user + 1 :])
    names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    shell = next((n for n in SHELL_TOOLS if n in names), None)
    if shell and not answered:
        arguments = json.dumps({"command": COMMAND})
        call = {"id": call_id, "type": "function", "function": {"name": shell, "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": FINAL_TEXT}


def chunks(message: dict) -> list[dict]:
    """The message as OpenAI stream chunks: role, content or call deltas, finish, usage (no choices)."""

    def delta(d: dict, finish: str | None = None) -> dict:
        return completion("chat.completion.chunk", [{"index": 0, "delta": d, "finish_reason": finish}])

    out = [delta({"role": "assistant", "content": ""})]
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        args = call["function"]["arguments"]
        head = {"index": 0, "id": call["id"], "type": "function"}
        out.append(delta({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]}))
        for part in (args[: len(args) // 2], args[len(args) // 2 :]):
            out.append(delta({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
        out.append(delta({}, "tool_calls"))
    else:
        words = message["content"].split(" ")
        for i in range(0, len(words), 4):
            out.append(delta({"content": " ".join(words[i : i + 4]) + (" " if i + 4 < len(words) else "")}))
        out.append(delta({}, "stop"))
    out.append(completion("chat.completion.chunk", [], usage=USAGE))
    return out


def start_fake() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    server.bodies, server.gets, server.lock = [], [], threading.Lock()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def versions(root: Path) -> dict[str, str]:
    def run(argv: list[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except OSError as exc:
            return f"unavailable ({exc})"
        lines = (done.stdout or done.stderr).strip().splitlines()
        return lines[-1] if lines else f"unknown (exit {done.returncode})"

    hermes_py = root / "hermes-venv" / "bin" / "python"
    query = "import importlib.metadata as m; print(m.version('hermes-agent'))"
    return {
        "pi": run([str(PiLauncher(root).binary), "--version"]),
        "oc": run([str(OpencodeLauncher(root).binary), "--version"]),
        "hermes": run([str(hermes_py), "-c", query]),
    }


def capture(harness: str, scratch: Path) -> tuple[list[dict], list[str], str]:
    """(chat-completions requests, other GET paths, a one-line outcome) of one run of `harness`."""
    server = start_fake()
    try:
        workspace = scratch / harness / "work"
        for rel, text in PROJECT.items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_text(text)
        port = server.server_address[1]
        spec = LaunchSpec(
            workspace=workspace,
            instruction=INSTRUCTION,
            base_url=f"http://127.0.0.1:{port}/v1",
            model=MODEL,
            timeout_s=240.0,
        )
        launcher = LAUNCHERS[harness]
        run_dir = scratch / harness / "run"
        run_dir.mkdir(parents=True)
        outcome = run_invocation(launcher.prepare(spec, run_dir), spec.timeout_s)
        result = launcher.finish(spec, run_dir, outcome)
        said = " ".join(result.stdout_tail.split())[-160:]
        line = (
            f"exit {result.exit_code}, timed out {result.timed_out}, failed {result.failed}, "
            f"{result.duration_s:.1f} s, its own tool-call count {result.tool_calls}; stdout tail: {said!r}"
        )
        if not result.ok:
            line += f"; stderr tail: {' '.join(result.stderr_tail.split())[-400:]!r}"
        return list(server.bodies), list(server.gets), line  # type: ignore[attr-defined]
    finally:
        server.shutdown()


def scrub(value: object, scratch: Path) -> object:
    """The run's temporary paths replaced by stable ones, so a re-run differs only where the harness does,
    and this checkout's path (pi's prompt names its install) by a neutral one."""
    text = json.dumps(value, ensure_ascii=False).replace(str(REPO) + "/", "/opt/harness-adapters/")
    for harness in LAUNCHERS:
        text = text.replace(str(scratch / harness / "work"), "/workspace")
        text = text.replace(str(scratch / harness / "run"), "/run")
    return json.loads(text.replace(str(scratch), "/scratch"))


def write_index(out: Path, runs: dict[str, tuple[list[dict], list[str], str]], vers: dict[str, str]) -> None:
    isolated = os.environ.get("CAPTURE_IN_NETNS") == "1"
    where = "in a loopback-only network namespace" if isolated else "without a network namespace"
    names = {"pi": "pi", "oc": "opencode", "hermes": "hermes"}
    lines = [
        "# Captured harness requests",
        "",
        f"Made by `scripts/capture_requests.py` on {datetime.date.today().isoformat()}; re-run it to",
        "refresh. Each harness, installed by `scripts/harness-deps.sh`, ran once, headless, through its",
        "launcher in `environments/harnesses/` (fresh HOME and config in a temporary folder, offline",
        f"switches on, {where}) against a fake OpenAI-compatible endpoint on 127.0.0.1. The",
        "agent's cwd was a small Python project (README.md, textstats/, tests/), shown as `/workspace`;",
        "the run folder (the harness's HOME) as `/run`.",
        "",
        f"Instruction: `{INSTRUCTION}`",
        "",
        "The fake's model answered a request whose conversation had no tool result yet with one call of the",
        "shell tool (`bash`, hermes: `terminal`) running",
        f"`{COMMAND}`,",
        "and anything else with a final text;",
        "streamed as SSE chunks when the request asked for `stream: true` (all of them did).",
        "",
        "Each `<h>-NN.json` is `{harness, seq, path, headers, body}`: one POST to `/v1/chat/completions` as",
        "received (the authorization header dropped), `NN` its order in the run.",
        "",
        "| harness | version | files | run |",
        "|---|---|---|---|",
    ]
    for harness, (bodies, gets, outcome) in runs.items():
        files = ", ".join(f"`{harness}-{i:02d}`" for i in range(1, len(bodies) + 1)) or "none"
        probes = f"; other requests: {', '.join('GET ' + g for g in gets)}" if gets else ""
        lines.append(f"| {names[harness]} | {vers[harness]} | {files} | {outcome}{probes} |")
    lines += ["", "| file | messages | tools | system prompt chars | stream |", "|---|---|---|---|---|"]
    for harness, (bodies, _, _) in runs.items():
        for i, request in enumerate(bodies, 1):
            body = request["body"]
            messages = body.get("messages") or []
            system = sum(len(str(m.get("content"))) for m in messages if m.get("role") == "system")
            roles = "/".join(m.get("role", "?") for m in messages)
            lines.append(
                f"| {harness}-{i:02d} | {roles} | {len(body.get('tools') or [])} | {system} | "
                f"{body.get('stream')} |"
            )
    (out / "INDEX.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", default=",".join(LAUNCHERS), help="comma-separated: pi,oc,hermes")
    parser.add_argument("--no-netns", action="store_true", help="run without a loopback-only namespace")
    args = parser.parse_args(argv)
    if not args.no_netns and os.environ.get("CAPTURE_IN_NETNS") != "1":
        if shutil.which("unshare") and shutil.which("ip") and os.geteuid() == 0:
            script = 'ip link set lo up && exec "$@"'
            inner = [sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:])]
            env = {**os.environ, "CAPTURE_IN_NETNS": "1"}
            return subprocess.run(["unshare", "-n", "sh", "-c", script, "sh", *inner], env=env).returncode
        print("capture: no unshare/ip or not root; running without a network namespace", file=sys.stderr)
    harnesses = [h for h in args.only.split(",") if h]
    unknown = set(harnesses) - set(LAUNCHERS)
    if unknown:
        parser.error(f"--only: unknown harness {sorted(unknown)}")
    root = install_root()
    vers = versions(root)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        scratch = Path(tmp)
        for harness in harnesses:
            bodies, gets, outcome = capture(harness, scratch)
            print(f"capture: {harness} {vers[harness]}: {len(bodies)} requests; {outcome}")
            runs[harness] = (scrub(bodies, scratch), gets, scrub(outcome, scratch))
            failed |= not any(r["body"].get("tools") for r in bodies)
    for harness, (bodies, _, _) in runs.items():
        for old in args.out.glob(f"{harness}-*.json"):
            old.unlink()
        for i, request in enumerate(bodies, 1):
            record = {"harness": harness, "seq": i, **request}
            path = args.out / f"{harness}-{i:02d}.json"
            path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    if set(harnesses) == set(LAUNCHERS):
        write_index(args.out, runs, vers)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
