"""HumanEval's plumbing with a scripted model: reference solutions pass, wrong code fails, in the sandbox."""

from __future__ import annotations

import shutil

import pytest

from environments.capability.humaneval import (
    extract_code,
    judge,
    load_problems,
    program,
    run_suite,
)

BWRAP_MISSING = "bubblewrap (bwrap) is not installed: apt-get update && apt-get install -y bubblewrap"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason=BWRAP_MISSING)


@pytest.fixture(scope="module")
def problems():
    return load_problems()


@pytest.fixture
def runner(tmp_path):
    from environments.sandboxes import LocalBackend
    from environments.sandboxes.runner import SandboxRunner

    return SandboxRunner(LocalBackend(tmp_path / "boxes", prefix="hxhe"))


def test_the_package_ships_all_164_problems(problems):
    assert len(problems) == 164 and problems[0].task_id == "HumanEval/0"
    assert len(load_problems(5)) == 5


def test_code_comes_from_the_last_fenced_block_or_the_whole_reply():
    assert extract_code("Here:\n```python\nx = 1\n```\nand\n```\ny = 2\n```\n") == "y = 2\n"
    assert extract_code("```py\nz = 3\n") == "z = 3\n"  # an unclosed block (a cut-off reply)
    assert extract_code("    return 1\n") == "    return 1\n"


def test_a_whole_function_reply_keeps_the_prompts_imports(problems):
    problem = problems[0]  # has_close_elements, typed with List from typing
    text = program(
        problem, f"```python\ndef {problem.entry_point}(numbers, threshold):\n    return 1\n```", "T"
    )
    assert text.startswith("from typing import List\ndef has_close_elements(")
    assert text.rstrip().endswith(f"check({problem.entry_point})\nprint('T')")


def scripted(problems, wrong: set[int]):
    """The model: the reference solution (as a continuation, or as a whole function in markdown for odd
    problems) except for the problems in ``wrong``, which get code that returns None."""
    replies = {}
    for index, problem in enumerate(problems):
        if index in wrong:
            replies[problem.prompt] = "    return None\n"
        elif index % 2:
            whole = problem.prompt + problem.canonical_solution
            replies[problem.prompt] = f"Sure.\n```python\n{whole}```\n"
        else:
            replies[problem.prompt] = problem.canonical_solution
    return lambda prompt: next(reply for head, reply in replies.items() if head in prompt)


@needs_bwrap
def test_reference_solutions_pass_and_wrong_code_fails(problems, runner):
    chosen = problems[:8]
    result = run_suite(chosen, scripted(chosen, wrong={1, 4, 6}), runner)
    outcome = {r.task_id: r.passed for r in result.problems}
    assert [outcome[p.task_id] for p in chosen] == [True, False, True, True, False, True, False, True]
    assert (result.passed, result.total, result.pass_at_1) == (5, 8, 5 / 8)


@needs_bwrap
def test_ending_early_with_status_0_or_reading_the_host_does_not_pass(problems, runner, tmp_path):
    problem = problems[2]
    early = judge(problem, "    import os\n    os._exit(0)\n", runner, tmp_path)
    assert not early.passed and early.reason == "ended before its tests ran"
    at_import = judge(problem, "import sys\nsys.exit(0)\n", runner, tmp_path)
    assert not at_import.passed
    secret = tmp_path / "secret.txt"
    secret.write_text("42\n")
    peek = judge(problem, f"    return float(open({str(secret)!r}).read())\n", runner, tmp_path)
    assert not peek.passed and "FileNotFoundError" in peek.reason


def test_a_model_error_is_that_problems_failure(problems, tmp_path):
    def broken(prompt: str) -> str:
        raise ConnectionError("server went away")

    result = run_suite(problems[:2], broken, runner=None)
    assert result.passed == 0 and all("ConnectionError" in r.reason for r in result.problems)


class ScriptedServer:
    """An OpenAI-compatible chat endpoint on loopback; ``answer(prompt, model)`` gives each reply; records the
    models asked (``missing`` gets a 404)."""

    def __init__(self, answer) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.models: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server hook name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.models.append(body["model"])
                if body["model"] == "missing":
                    self.send_response(404)
                    self.end_headers()
                    return
                reply = {
                    "choices": [
                        {
                            "message": {
                                "role": "assistant",
                                "content": answer(body["messages"][0]["content"], body["model"]),
                            }
                        }
                    ]
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@needs_bwrap
def test_the_suite_through_an_openai_endpoint_scores_what_the_server_answers(problems, runner):
    from environments.capability.client import chat_generate

    chosen = problems[:4]
    model = scripted(chosen, wrong={0})
    server = ScriptedServer(lambda prompt, _model: model(prompt))
    try:
        result = run_suite(chosen, chat_generate(server.url, "pi-v3", max_tokens=64), runner)
        missing = run_suite(chosen[:1], chat_generate(server.url, "missing"), runner)
    finally:
        server.close()
    assert (result.passed, result.total) == (3, 4) and set(server.models) == {"pi-v3", "missing"}
    assert missing.passed == 0 and "HTTPStatusError" in missing.problems[0].reason
