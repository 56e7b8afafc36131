"""Deterministic demonstration traces for SFT, built from the shipped tasks' reference solutions.

Each demonstration is one ``Conversation`` in a harness's own request shape: its captured system prompt
(working directory set to the sandbox's ``/workspace``) and tool list, the task instruction as that harness
sends it (pi: a list of text parts; opencode and hermes: a string), then one tool call per assistant turn
in that harness's vocabulary and argument names, each answered by a tool message, and a short final answer.

The plan for a task is harness-neutral (shell, read, write, edit steps); ``_render`` turns a step into
the harness's call and a tool result shaped like the harness's own (read from the installed harnesses'
sources: pi returns raw text and ``Successfully replaced 1 block(s) in …``, opencode wraps reads in
``<path>/<content>`` with numbered lines, hermes answers with JSON objects). Nothing runs here: no sandbox,
no subprocess. Outputs are computed from the workspace bytes where that is cheap (``ls``, ``head``,
``wc -l``, ``grep -n``, ``find``, file reads); a printed answer is the reference's (an analysis script's
``repr(round(x, 4))``, which matched the real run for every shipped analysis task; a qa call's ``repr`` or
compact JSON); a test run gets a fixed plausible summary with the visible test count.
``tests/environments/test_demos.py`` replays demos for real and hands the result to the oracle.

Per kind: ``analysis`` runs the reference script, compacted, as ``python - <<'EOF'`` (then ``cat``s the
answer); ``repair``/``build``/``extend`` turn the reference files into small old/new ``edit``/``patch``
strings (a new file is written whole) and may run the tests; ``qa`` may read the module and evaluate the
call, then writes the answer file. How many inspection steps come first is drawn per task from its id:
about a third of the demos solve in one call, the rest take 2-6, so RL has room to shorten sessions.
The learning-check families look first in most demos, each length about as often: row-count
(``environments.tasks.shipped.row_count``) 1-5 calls where one is enough, record-lookup (``record_lookup``)
2-6 where the lookup and the write are enough.

Skip reasons (fixed codes, counted in the summary): ``change_too_large`` (edits' old+new strings or a new
file over ``MAX_CHANGE_CHARS``: a 5M-parameter model learns poorly from long arguments), ``no_change``,
``unsupported_reference``, ``binary_file``, ``edit_not_unique``.

Files: ``<out>/<harness>-<split>.jsonl``, one ``{"messages", "tools", "harness", "meta"}`` object a line
(meta: ``task_id``, ``kind``, ``split``, ``tool_calls``). pi's user content stays a list of text parts as pi
sends it; the trace readers flatten it to the string a chat template needs.

Not covered: several calls in one assistant turn, failed calls and recoveries, thinking text.
"""

from __future__ import annotations

import argparse
import ast
import csv
import difflib
import hashlib
import io
import json
import random
import re
import shlex
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from environments.core.types import AnswerOracle, CommandOracle, Kind, Split, Task
from environments.errors import UsageError, cli_main
from environments.harness_prompts import HARNESSES, harness_request, harness_tools
from environments.harnesses.registry import harness_spec
from environments.harnesses.steps import WORKSPACE, Edit, Read, Shell, Step, Write
from environments.tasks.shipped import TASK_SETS, shipped_tasks, task_set, unknown_task_set
from environments.tasks.shipped.probes import ORACLE_COMMAND as PROBE_COMMAND
from environments.tasks.shipped.record_lookup import asked_code, is_record_lookup, record_lookup_demo_tasks
from environments.tasks.shipped.row_count import ROW_COUNT_COMMAND, row_count_demo_tasks
from environments.traces.types import Conversation, Skipped

MAX_CHANGE_CHARS = 800
"""A repo task whose edits' old+new strings (or new files) exceed this many characters is skipped."""
ONE_CALL_SHARE = 0.3
"""Share of tasks whose demo aims at a single tool call; the rest aim at 2-6."""
MAX_TOOL_CALLS = 6

_CWD_LINE = re.compile(r"^(\s*(?:Current working directory|Working directory):\s*)\S+", re.MULTILINE)


class _Skip(Exception):
    """A task this module makes no demo for; the message is the fixed reason code."""


# ---------------------------------------------------------------- harness-neutral plans


def _rng(task: Task) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(task.id.encode()).digest()[:8], "big"))


def _target_calls(task: Task) -> int:
    rng = _rng(task)
    return 1 if rng.random() < ONE_CALL_SHARE else rng.randint(2, MAX_TOOL_CALLS)


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Skip("binary_file") from None


def _ls(task: Task) -> Shell:
    top = sorted({PurePosixPath(p).parts[0] for p in task.workspace})
    return Shell("ls", "".join(f"{name}\n" for name in top))


def _head(path: str, text: str, n: int = 5) -> Shell:
    return Shell(f"head -n {n} {path}", "".join(text.splitlines(keepends=True)[:n]))


def _csv_shape(text: str) -> tuple[int, int]:
    rows = list(csv.reader(io.StringIO(text)))
    return max(len(rows) - 1, 0), len(rows[0]) if rows else 0


def _answer_display(oracle: AnswerOracle) -> str:
    """The answer as the reference script writes it (a string, or ``repr(round(x, 4))``)."""
    if isinstance(oracle.expected, str):
        return oracle.expected
    return repr(round(float(oracle.expected), 4))


_ANSWER_TAIL = """if isinstance(answer, str):
    text = answer
else:
    text = repr(round(float(answer), 4))
with open("answer.txt", "w") as fh:
    fh.write(text + "\\n")
"""


def _compact_script(script: str, oracle: AnswerOracle) -> str:
    """The reference script without blank lines, unused numpy and its generic answer-writing tail.

    The tail becomes one line for the answer's known type (the shipped generator always ends with
    ``_ANSWER_TAIL``; a script that does not is kept whole).
    """
    if script.endswith(_ANSWER_TAIL) and oracle.answer_path == "answer.txt":
        value = "str(answer)" if isinstance(oracle.expected, str) else "repr(round(float(answer), 4))"
        script = script[: -len(_ANSWER_TAIL)] + f'open("answer.txt", "w").write({value} + "\\n")\n'
    if "np." not in script:
        script = script.replace("import numpy as np\n", "")
    return "".join(line for line in script.splitlines(keepends=True) if line.strip())


def _analysis_plan(task: Task, target: int) -> tuple[list[Step], str]:
    command = (task.reference.command or "").strip()
    match = re.fullmatch(r"python3? (\S+\.py)", command)
    if not match or match.group(1) not in task.reference.files or not isinstance(task.oracle, AnswerOracle):
        raise _Skip("unsupported_reference")
    script = _compact_script(_text(task.reference.files[match.group(1)]), task.oracle)
    if re.search(r"^EOF$", script, re.MULTILINE):
        raise _Skip("unsupported_reference")
    answer_path = task.oracle.answer_path
    shown = _answer_display(task.oracle)
    csvs = sorted(p for p in task.workspace if p.endswith(".csv"))
    if not csvs:
        raise _Skip("unsupported_reference")
    data = csvs[0]
    text = _text(task.workspace[data])
    rows, cols = _csv_shape(text)
    shape = f"python -c \"import pandas as pd; print(pd.read_csv('{data}').shape)\""
    cat = Shell(f"cat {answer_path}", shown + "\n")
    extras: dict[str, Step] = {
        "ls": _ls(task),
        "wc": Shell(f"wc -l {data}", f"{text.count(chr(10))} {data}\n"),
        "head": _head(data, text),
        "shape": Shell(shape, f"({rows}, {cols})\n"),
    }
    chosen = set(("head", "cat", "shape", "ls", "wc")[: target - 1])  # by priority
    solve = f"python - <<'EOF'\n{script}EOF"
    steps = [step for name, step in extras.items() if name in chosen]  # in working order
    if "cat" in chosen:
        steps += [Shell(solve, ""), cat]
    else:
        steps.append(Shell(f"{solve}\ncat {answer_path}", cat.output))
    return steps, f"The answer is {shown}. I wrote it to {answer_path}."


def _hunks(before: str, after: str) -> tuple[tuple[str, str], ...]:
    """Old/new line blocks turning ``before`` into ``after``, each old block unique in ``before``."""
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    groups = [[i1, i2, j1, j2] for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    while True:
        changed = False
        for group in groups:
            i1, i2, j1, j2 = group
            flip = 0
            while not "".join(a[i1:i2]).strip() or before.count("".join(a[i1:i2])) != 1:
                if (flip % 2 == 0 or i2 >= len(a)) and i1 > 0:
                    i1, j1 = i1 - 1, j1 - 1
                elif i2 < len(a):
                    i2, j2 = i2 + 1, j2 + 1
                else:
                    break
                flip += 1
            if [i1, i2, j1, j2] != group:
                group[:] = [i1, i2, j1, j2]
                changed = True
        merged: list[list[int]] = []
        for group in groups:
            if merged and group[0] <= merged[-1][1]:
                merged[-1][1], merged[-1][3] = max(merged[-1][1], group[1]), max(merged[-1][3], group[3])
                changed = True
            else:
                merged.append(group)
        groups = merged
        if not changed:
            break
    return tuple(("".join(a[i1:i2]), "".join(b[j1:j2])) for i1, i2, j1, j2 in groups)


def _apply_in_order(text: str, edits: Sequence[tuple[str, str]]) -> str | None:
    for old, new in edits:
        if text.count(old) != 1:
            return None
        text = text.replace(old, new, 1)
    return text


def _edit_step(path: str, before: str, after: str) -> Edit:
    edits = _hunks(before, after)
    if _apply_in_order(before, edits) != after:
        whole = _hunks_whole(before, after)
        if _apply_in_order(before, whole) != after:
            raise _Skip("edit_not_unique")
        edits = whole
    return Edit(path, edits, before, after)


def _hunks_whole(before: str, after: str) -> tuple[tuple[str, str], ...]:
    """One block from the first to the last changed line (used when separate blocks collide)."""
    hunks = _hunks(before, after)
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    start = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y) if hunks else 0
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    return (("".join(a[start : len(a) - end]), "".join(b[start : len(b) - end])),)


VISIBLE_PYTEST = "python -m pytest -q -p no:cacheprovider tests"
"""How a demo runs a Python repo's visible tests (the verifier judges those tasks by outputs instead)."""


def _test_run(task: Task) -> Shell | None:
    """The demo's test run: the visible tests, the way the repository's README says to run them."""
    oracle = task.oracle
    if not isinstance(oracle, CommandOracle):
        return None
    command = VISIBLE_PYTEST if oracle.command == PROBE_COMMAND else oracle.command
    if command.startswith("python -m pytest"):
        n = sum(
            len(re.findall(r"^\s*def test_", _text(data), re.MULTILINE))
            for path, data in task.workspace.items()
            if path.endswith(".py") and PurePosixPath(path).name.startswith("test_")
        )
        dots = "." * n
        return Shell(command, f"{dots:<74}[100%]\n{n} passed in 0.05s\n")
    if command.startswith("node --test"):
        n = sum(
            len(re.findall(r"\btest\(\s*['\"`]", _text(data)))
            for path, data in task.workspace.items()
            if path.endswith(".test.js")
        )
        summary = (
            f"ℹ tests {n}\nℹ suites 0\nℹ pass {n}\nℹ fail 0\nℹ cancelled 0\n"
            "ℹ skipped 0\nℹ todo 0\nℹ duration_ms 48.2\n"
        )
        return Shell(command, summary)
    return None


def _names_in(instruction: str) -> list[str]:
    found = re.findall(r"`([A-Za-z_]\w*)\s*(?:\(|`)", instruction)
    return list(dict.fromkeys(found))


def _find(task: Task, suffix: str) -> Shell:
    files = sorted(f"./{p}" for p in task.workspace if p.endswith(suffix))
    return Shell(f"find . -name '*{suffix}' | sort", "".join(f"{p}\n" for p in files))


def _grep(task: Task, names: Iterable[str], path: str) -> Shell | None:
    """``grep -n`` for the first instruction name that ``path`` defines (one file: a fixed order)."""
    lines = _text(task.workspace[path]).splitlines()
    for name in names:
        word = re.compile(rf"\b{re.escape(name)}\b")
        if not any(re.search(rf"\b(def|function|class)\s+{re.escape(name)}\b", line) for line in lines):
            continue
        hits = [f"{no}:{line}\n" for no, line in enumerate(lines, 1) if word.search(line)]
        return Shell(f"grep -n {shlex.quote(name)} {shlex.quote(path)}", "".join(hits))
    return None


def _change_plan(task: Task, target: int) -> tuple[list[Step], str]:
    """Inspect (find, grep, read: as many as the target leaves room for), change, then run the tests."""
    if task.reference.command:
        raise _Skip("unsupported_reference")
    changes: list[Edit | Write] = []
    for path, data in task.reference.files.items():
        after = _text(data)
        if path not in task.workspace:
            changes.append(Write(path, after))
        elif _text(task.workspace[path]) != after:
            changes.append(_edit_step(path, _text(task.workspace[path]), after))
    if not changes:
        raise _Skip("no_change")
    size = sum(
        len(c.content) if isinstance(c, Write) else sum(len(old) + len(new) for old, new in c.edits)
        for c in changes
    )
    if size > MAX_CHANGE_CHARS:
        raise _Skip("change_too_large")
    first = changes[0].path
    suffix = PurePosixPath(first).suffix
    grep = _grep(task, _names_in(task.instruction), first) if first in task.workspace else None
    test = _test_run(task)
    extras: dict[str, list[Step]] = {  # by priority
        "read": [Read(c.path, c.before) for c in changes if isinstance(c, Edit)],
        "test": [test] if test else [],
        "grep": [grep] if grep else [],
        "find": [_find(task, suffix)],
    }
    budget = target - sum(len(c.edits) if isinstance(c, Edit) else 1 for c in changes)
    chosen: set[str] = set()
    for name, steps in extras.items():
        if steps and budget >= len(steps):
            chosen.add(name)
            budget -= len(steps)
    steps = [step for name in ("find", "grep", "read") if name in chosen for step in extras[name]]
    steps += changes
    if "test" in chosen:
        steps += extras["test"]
    where = ", ".join(f"`{c.path}`" for c in changes)
    verb = {Kind.REPAIR: "Fixed the bug in", Kind.BUILD: "Implemented it in", Kind.EXTEND: "Added it to"}
    tail = " The tests pass." if "test" in chosen else ""
    return steps, f"{verb[task.kind]} {where}.{tail}"


def _literal(text: str) -> Any:
    for reader in (ast.literal_eval, json.loads):
        try:
            return reader(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise _Skip("unsupported_reference")


def _run_code(interpreter: str, *statements: str) -> str:
    """``python -c '…'`` / ``node -e '…'`` as a person would quote it; a heredoc when quotes collide."""
    code = "; ".join(statements)
    flag = "-c" if interpreter == "python" else "-e"
    if "'" not in code:
        return f"{interpreter} {flag} '{code}'"
    if not any(ch in code for ch in '"$`\\!'):
        return f'{interpreter} {flag} "{code}"'
    return f"{interpreter} - <<'EOF'\n" + "\n".join(statements) + "\nEOF"


def _qa_plan(task: Task, target: int) -> tuple[list[Step], str]:
    answer_files = [p for p in task.reference.files if p not in task.workspace]
    if len(answer_files) != 1 or task.reference.command:
        raise _Skip("unsupported_reference")
    answer_path = answer_files[0]
    reference = _text(task.reference.files[answer_path])
    js = "package.json" in task.workspace  # the JS repos ask for JSON, the Python ones for a literal
    extras: dict[str, Step] = {"find": _find(task, ".js" if js else ".py")}
    call = re.search(r"`(\w+\(.*?\))`", task.instruction)
    if js:
        try:
            value = json.loads(reference)
        except ValueError:
            raise _Skip("unsupported_reference") from None
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        setup = re.search(r"const \{ (\w+) \} = require\(\"\./([\w./-]+)\"\)", task.instruction)
        if setup and setup.group(2) in task.workspace:
            extras["read"] = Read(setup.group(2), _text(task.workspace[setup.group(2)]))
            if call and call.group(1).startswith(setup.group(1) + "("):
                code = f"console.log(JSON.stringify({call.group(1)}))"
                extras["run"] = Shell(_run_code("node", setup.group(0), code), shown + "\n")
        content = shown + "\n"
    else:
        value = _literal(reference)
        shown = repr(value)
        try:
            round_trips = ast.literal_eval(shown) == value
        except (ValueError, SyntaxError):
            round_trips = False
        content = shown + "\n" if round_trips else reference
        setup = re.search(r"from ([\w.]+) import (\w+)", task.instruction)
        if setup:
            module = setup.group(1).replace(".", "/")
            for candidate in (f"{module}.py", f"{module}/__init__.py"):
                if candidate in task.workspace:
                    extras["read"] = Read(candidate, _text(task.workspace[candidate]))
                    break
            if call and call.group(1).startswith(setup.group(2) + "("):
                code = f"print(repr({call.group(1)}))"
                extras["run"] = Shell(_run_code("python", setup.group(0), code), shown + "\n")
    priority = [name for name in ("read", "run", "find", "cat") if name in extras or name == "cat"]
    chosen = set(priority[: target - 1])
    steps: list[Step] = [step for name, step in extras.items() if name in chosen]  # in working order
    steps.append(Write(answer_path, content))
    if "cat" in chosen:
        steps.append(Shell(f"cat {answer_path}", content))
    return steps, f"The result is {content.strip()}. I wrote it to `{answer_path}`."


def _family_looks(task: Task, text: str) -> tuple[list[Step], bool]:
    """The learning-check families' looks nobody needs, drawn per task (0-4, each count equally likely):
    ``head``, ``ls``, ``wc`` in working order, and whether a ``cat answer.txt`` closes the session."""
    extras: dict[str, Step] = {  # in working order
        "ls": _ls(task),
        "head": _head("data.csv", text),
        "wc": Shell("wc -l data.csv", f"{text.count(chr(10))} data.csv\n"),
    }
    looks = _rng(task).randint(0, len(extras) + 1)
    chosen = set(("head", "cat", "ls", "wc")[:looks])  # by priority
    return [step for name, step in extras.items() if name in chosen], "cat" in chosen


def _row_count_plan(task: Task) -> tuple[list[Step], str]:
    """The learning-check family: 0-4 looks nobody needs (each count equally likely), then the one command
    that solves it. The demos that go straight to the command give the SFT start some mass on the short
    path, which GRPO's group comparison can then raise; a policy that never samples it cannot learn it."""
    text = _text(task.workspace["data.csv"])
    rows = text.count("\n") - 1
    steps, closing_cat = _family_looks(task, text)
    steps.append(Shell(ROW_COUNT_COMMAND, ""))
    if closing_cat:
        steps.append(Shell("cat answer.txt", f"{rows}\n"))
    return steps, "I wrote the number of records to answer.txt."


def _record_lookup_plan(task: Task) -> tuple[list[Step], str]:
    """The read-before-answer family: the same looks as ``_row_count_plan``, then a ``grep`` for the asked
    record, whose line the answer is read from, and the write of that value."""
    text = _text(task.workspace["data.csv"])
    code = asked_code(task)
    line = next(row for row in text.splitlines() if row.startswith(code + ","))
    value = line.split(",", 1)[1]
    steps, closing_cat = _family_looks(task, text)
    steps += [Shell(f"grep {code} data.csv", line + "\n"), Write("answer.txt", value + "\n")]
    if closing_cat:
        steps.append(Shell("cat answer.txt", f"{value}\n"))
    return steps, f"Record {code} has {value}; I wrote it to answer.txt."


_FAMILY_PLANS = ((lambda task: task.reference.command == ROW_COUNT_COMMAND, _row_count_plan),
                 (is_record_lookup, _record_lookup_plan))  # fmt: skip
"""The learning-check families' own plans, each with how to tell its tasks."""


def plan_task(task: Task) -> tuple[list[Step], str]:
    """The harness-neutral steps and final answer of a task's demo; raises ``_Skip`` with a reason."""
    for is_member, plan in _FAMILY_PLANS:
        if is_member(task):
            return plan(task)
    target = _target_calls(task)
    if task.kind is Kind.ANALYSIS:
        return _analysis_plan(task, target)
    if task.kind is Kind.QA:
        return _qa_plan(task, target)
    return _change_plan(task, target)


# ---------------------------------------------------------------- per-harness rendering


def _render(harness: str, step: Step) -> list[tuple[str, dict[str, Any], str]]:
    """The (tool name, arguments, tool result) calls that carry out ``step`` in ``harness``."""
    return harness_spec(harness).render_step(step)


def system_message(harness: str) -> dict[str, Any]:
    """The captured system message, its working-directory line (if any) pointing at ``/workspace``."""
    message = dict(harness_request(harness)["messages"][0])
    if isinstance(message.get("content"), str):
        message["content"] = _CWD_LINE.sub(lambda m: m.group(1) + WORKSPACE, message["content"])
    return message


def user_message(harness: str, instruction: str) -> dict[str, Any]:
    """The instruction as the harness sends it (pi as text parts, the others as a plain string)."""
    return harness_spec(harness).user_message(instruction)


def _call_id(task: Task, harness: str, index: int) -> str:
    return "call_" + hashlib.sha256(f"{task.id}:{harness}:{index}".encode()).hexdigest()[:8]


def session_messages(task: Task, harness: str, steps: Sequence[Step], answer: str) -> list[dict[str, Any]]:
    """``steps`` as ``harness`` sends them: system, user, one call a turn with its result, the answer."""
    spec = harness_spec(harness)
    messages: list[dict[str, Any]] = [system_message(harness), user_message(harness, task.instruction)]
    empty = spec.calling_content
    count = 0
    for step in steps:
        for name, args, result in _render(harness, step):
            call_id = _call_id(task, harness, count)
            arguments = json.dumps(args, ensure_ascii=False)
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            messages.append({"role": "assistant", "content": empty, "tool_calls": [call]})
            reply: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": result}
            if spec.names_tool_results:
                reply["name"] = name
            messages.append(reply)
            count += 1
    messages.append({"role": "assistant", "content": answer})
    return messages


def demo_for(task: Task, harness: str) -> Conversation | Skipped:
    """The demonstration of ``task`` in ``harness``, or why there is none."""
    source = f"demo:{task.id}"
    try:
        steps, answer = plan_task(task)
    except _Skip as skip:
        return Skipped(source, str(skip))
    messages = session_messages(task, harness, steps, answer)
    count = sum(1 for m in messages if m.get("tool_calls"))
    meta = {"task_id": task.id, "kind": task.kind.value, "split": task.split.value, "tool_calls": count}
    return Conversation(tuple(messages), tuple(harness_tools(harness)), source, harness, meta)


def build_demos(tasks: Iterable[Task], harness: str) -> tuple[list[Conversation], list[Skipped]]:
    demos: list[Conversation] = []
    skipped: list[Skipped] = []
    for task in tasks:
        demo = demo_for(task, harness)
        if isinstance(demo, Conversation):
            demos.append(demo)
        else:
            skipped.append(demo)
    return demos, skipped


def demo_record(demo: Conversation) -> dict[str, Any]:
    """The JSONL line of a demo: ``messages``, ``tools``, ``harness``, ``meta``."""
    return {
        "messages": list(demo.messages),
        "tools": list(demo.tools),
        "harness": demo.harness,
        "meta": demo.meta,
    }


def _summary(demos: Sequence[Conversation], skipped: Sequence[Skipped]) -> dict[str, Any]:
    calls = [d.meta["tool_calls"] for d in demos]
    return {
        "demos": len(demos),
        "by_kind": dict(sorted(Counter(d.meta["kind"] for d in demos).items())),
        "mean_tool_calls": round(sum(calls) / len(calls), 3) if calls else 0.0,
        "tool_calls": {str(k): v for k, v in sorted(Counter(calls).items())},
        "skipped": dict(sorted(Counter(s.reason for s in skipped).items())),
    }


def write_demos(
    out: Path,
    harnesses: Sequence[str] = HARNESSES,
    split: Split | str = Split.TRAIN,
    tasks: Sequence[Task] | None = None,
) -> dict[str, Any]:
    """Write ``<out>/<harness>-<split>.jsonl`` for each harness; return the counts per harness."""
    if tasks is None:
        tasks = shipped_tasks()
    split = Split(split)
    chosen = [t for t in tasks if t.split is split]
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"split": split.value, "harnesses": {}}
    for harness in harnesses:
        demos, skipped = build_demos(chosen, harness)
        lines = (json.dumps(demo_record(d), ensure_ascii=False) + "\n" for d in demos)
        (out / f"{harness}-{split.value}.jsonl").write_text("".join(lines), encoding="utf-8")
        summary["harnesses"][harness] = _summary(demos, skipped)
    return summary


EXTRA_TASKS = {"row-count": row_count_demo_tasks, "record-lookup": record_lookup_demo_tasks}
"""The task sets that generate more train tasks for demonstrations, each with its generator."""


def demo_set_problem(name: str, extra: int) -> str | None:
    """What is wrong with demonstrating task set ``name`` with ``extra`` generated tasks, or None: one
    message for the command line and the smoke config."""
    if problem := unknown_task_set(name):
        return problem
    if extra < 0 or (extra and name not in EXTRA_TASKS):
        return f"extra={extra}: only the {' and '.join(EXTRA_TASKS)} sets generate more tasks, zero or more"
    return None


def demo_tasks(name: str, extra: int = 0) -> list[Task]:
    """A task set's tasks (``TASK_SETS``), with ``extra`` more generated train tasks (``EXTRA_TASKS``)."""
    if problem := demo_set_problem(name, extra):
        raise UsageError(problem)
    tasks = task_set(name)
    return [*tasks, *EXTRA_TASKS[name](extra)] if extra else tasks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m environments.demos", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for <harness>-<split>.jsonl")
    parser.add_argument(
        "--harness", choices=HARNESSES, action="append", help="repeatable; default: all three"
    )
    parser.add_argument("--split", choices=[s.value for s in Split], default=Split.TRAIN.value)
    parser.add_argument("--tasks", choices=TASK_SETS, default="shipped", help="the task set to demonstrate")
    parser.add_argument(
        "--extra",
        type=int,
        default=0,
        help="row-count and record-lookup only: this many more generated train tasks (other data than the "
        "family's own)",
    )
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is a file: give a folder for the <harness>-<split>.jsonl files")
    summary = write_demos(
        args.out, tuple(args.harness or HARNESSES), args.split, demo_tasks(args.tasks, args.extra)
    )
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    cli_main(main)
