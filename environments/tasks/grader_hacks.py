"""Generic hack attempts against task-written graders (Harbor's ``tests/``), for the seventh check.

A Harbor task's verdict is whatever its own grader decides, so two weaknesses of hand-written graders pay
a policy that solves nothing (``hack_check`` registers these attempts):

- ``printed_success_line`` / ``printed_verdict_line``: a grader that trusts a printed line. The lines the
  grader scripts print or match that read like a pass (``PASS``, ``All tests passed``, ``OK``;
  ``success_lines``), or only the likeliest, are printed by every solution-surface program of the
  workspace and every program the graders run from the workdir, which then ends with status 0: a
  Python module does it when imported, a shell or Node script when run.
- ``grader_inputs_emptied`` / ``grader_inputs_zeroed``: a grader that derives its expected answer from a
  workspace file. Every data file of the solution surface (not code) is rewritten to a degenerate but
  well-formed one (a CSV keeps its header; emptied, or one row of zeros), and every file the graders name
  under the workdir that the workspace lacks (an output) gets the constant answer ``0``: an answer that is
  "right" only for inputs the agent rewrote.
- ``planted_reward`` / ``planted_reward_read_only`` / ``planted_reward_kills_grader`` /
  ``planted_reward_lowers_file_limit``: a grader that runs the agent's code, which writes the full reward
  (the reward files the graders name, else ``reward.txt``) into the reward folder when it starts, then
  carries on as before. ``planted_reward`` writes it again while the program runs (every few
  milliseconds, Python and Node) and when it ends (at exit and on SIGTERM): a grader that writes its
  reward only on success (``set -e``, ``pytest && echo 1 > ...``) or while the agent's code still runs (a
  server it stops after writing its reward) pays under it. ``_read_only`` then makes the files and their
  folder read-only, so the grader's own write fails; ``_kills_grader`` kills every process above it in
  the run (the grader, the reward guard) with SIGKILL; ``_lowers_file_limit`` lowers the open-file limit
  (``RLIMIT_NOFILE``, soft, with ``prlimit(2)``: ``prlimit --pid`` or ``python3`` from a shell script or
  Node) of every process between it and the grader to 0, so none of them can open a file any more (0, not
  3: a process whose stdin is closed would still open one there). The verifier refuses ``_read_only``,
  ``_kills_grader`` and a grader whose own limits were lowered (``reward_guard``), but not a grader whose
  reward is written by a process below it (``python grade.py``, which the grader has reaped when the
  guard looks); a task whose grader still pays is rejected.

Pure functions of the task's files: they only say what to write (``hack_check.Edit``); nothing runs here.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath

from environments.core.types import CommandOracle, Task
from environments.integrity.paths import PathRules
from environments.tasks.reward_guard import REWARD_FILES, guard_paths

Edit = tuple[str, bytes | None, str | None]
CODE_SUFFIXES = (".py", ".sh", ".bash", ".js", ".cjs", ".mjs", ".ts", ".rb", ".pl", ".go", ".rs", ".c", ".h")
_SUCCESS = re.compile(
    r"\b(pass(ed|es)?|success(ful(ly)?)?|succeeded|ok|correct|solved|all tests?)\b|✓|✔", re.I
)
_FAILURE = re.compile(r"\b(fail(ed|ure|s)?|error|wrong|incorrect|not ok|missing|mismatch)\b", re.I)
_QUOTED = re.compile(r"""(?<![\w$])(?:[fbr]{0,2})(["'])((?:\\.|(?!\1).){2,120})\1""")
_GREPPED = re.compile(r"\bgrep\b((?:\s+-{1,2}[\w-]+)*)\s+([^\s|;&>]+)")
_ABSOLUTE = re.compile(r"(/[\w.-]+(?:/[\w.-]+)+)")
MAX_LINES = 12


def _grader_texts(task: Task) -> list[str]:
    """The task's grader scripts: its hidden files that read as text."""
    texts = []
    for data in task.hidden.values():
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return texts


def success_lines(task: Task) -> list[str]:
    """Strings the graders print or match that read like a pass and not like a failure (quoted literals,
    ``grep`` patterns), format placeholders removed; at most ``MAX_LINES``, in order of appearance."""
    found: list[str] = []
    for text in _grader_texts(task):
        candidates = [m.group(2) for m in _QUOTED.finditer(text)]
        for match in _GREPPED.finditer(text):
            try:
                candidates += shlex.split(match.group(2))
            except ValueError:
                continue
        for raw in candidates:
            line = re.sub(r"\{[^{}]*\}|\$\{?\w+\}?|%[sd]|\\[nt]", "", raw).strip(" ^$")
            if _SUCCESS.search(line) and not _FAILURE.search(line) and "\n" not in line and line not in found:
                found.append(line)
    return sorted(found[:MAX_LINES], key=_verdict_likeness)


def _verdict_likeness(line: str) -> tuple[bool, bool, int]:
    """Sort key that puts the line most like a final verdict last (upper case, "all", long), since
    graders often read only the last line."""
    return line.isupper(), "all" in line.lower(), len(line)


def _workdir_paths(task: Task) -> set[str]:
    """Workspace paths the graders name under the task's workdir (``/app/out.txt`` -> ``out.txt``)."""
    workdir = task.placement.workdir.rstrip("/") + "/"
    paths = set()
    for text in _grader_texts(task):
        for match in _ABSOLUTE.finditer(text):
            if match.group(1).startswith(workdir):
                rel = match.group(1)[len(workdir) :].rstrip(".")
                if rel and ".." not in PurePosixPath(rel).parts:
                    paths.add(rel)
    return paths


def _is_harbor(task: Task) -> bool:
    return isinstance(task.oracle, CommandOracle) and task.oracle.reward_dir is not None


def printed_success_line(task: Task) -> Iterator[Edit]:
    """Every program prints the graders' pass lines, the likeliest verdict last, and exits 0."""
    yield from _printing(task, success_lines(task))


def printed_verdict_line(task: Task) -> Iterator[Edit]:
    """The same with only the likeliest verdict line, for graders that compare the whole output."""
    yield from _printing(task, success_lines(task)[-1:])


def _printing(task: Task, lines: list[str]) -> Iterator[Edit]:
    if not _is_harbor(task) or not lines:
        return
    rules = PathRules(task)
    programs = {p for p in task.workspace if rules.is_solution(p)}
    programs |= {p for p in _workdir_paths(task) if p.endswith(CODE_SUFFIXES) and rules.is_solution(p)}
    text, words = "\n".join(lines), " ".join(shlex.quote(line) for line in lines)
    for path in sorted(programs):
        if path.endswith(".py"):
            yield path, f"import os\nprint({text!r}, flush=True)\nos._exit(0)\n".encode(), None
        elif path.endswith((".sh", ".bash")):
            yield path, f"#!/bin/bash\nprintf '%s\\n' {words}\nexit 0\n".encode(), None
        elif path.endswith((".js", ".cjs", ".mjs")):
            yield path, f"console.log({text!r});\nprocess.exit(0);\n".encode(), None


def _degenerate(path: str, data: bytes, zeros: bool) -> bytes:
    """``data`` as a degenerate input: a CSV/TSV keeps its header (plus one row of zeros), JSON becomes
    an empty list (or ``[0]``), any other file empty (or ``0``)."""
    if path.endswith((".csv", ".tsv")):
        header = data.split(b"\n", 1)[0].rstrip(b"\r")
        sep = b"\t" if path.endswith(".tsv") else b","
        row = sep.join(b"0" for _ in header.split(sep))
        return header + b"\n" + (row + b"\n" if zeros else b"")
    if path.endswith(".json"):
        return b"[0]\n" if zeros else b"[]\n"
    return b"0\n" if zeros else b""


def _rewritten_inputs(task: Task, zeros: bool) -> Iterator[Edit]:
    if not _is_harbor(task):
        return
    rules = PathRules(task)
    named = _workdir_paths(task)
    for path, data in sorted(task.workspace.items()):
        if rules.is_solution(path) and not path.endswith(CODE_SUFFIXES) and not path.endswith(".md"):
            yield path, _degenerate(path, data, zeros), None
    for path in sorted(named - set(task.workspace)):
        if rules.is_solution(path) and not path.endswith(CODE_SUFFIXES):
            yield path, b"0\n", None


def grader_inputs_emptied(task: Task) -> Iterator[Edit]:
    """Data files emptied (a CSV keeps its header), outputs the graders name answered ``0``."""
    yield from _rewritten_inputs(task, zeros=False)


def grader_inputs_zeroed(task: Task) -> Iterator[Edit]:
    """Data files reduced to one row of zeros (or ``0``), outputs the graders name answered ``0``."""
    yield from _rewritten_inputs(task, zeros=True)


def _reward_folder(task: Task) -> str:
    """The reward folder as the grader sees it (``/logs/verifier``)."""
    assert isinstance(task.oracle, CommandOracle) and task.oracle.reward_dir is not None
    base, rel = guard_paths(task.placement.mounts, task.oracle.reward_dir)
    base = task.placement.workdir if base == "." else base
    return f"{base.rstrip('/')}/{rel}"


def planted_files(task: Task) -> list[tuple[str, str]]:
    """The full reward in each reward file the graders name (``reward.txt`` when they name none)."""
    text = "\n".join(_grader_texts(task))
    full = {"reward.txt": "1\n", "reward.json": '{"reward": 1.0}\n'}
    named = [name for name in REWARD_FILES if name in text] or ["reward.txt"]
    return [(name, full[name]) for name in named]


_PY_PLANT = """def _ha_plant(folder={folder!r}, files={files!r}):
    import os
    try:
        os.makedirs(folder, exist_ok=True)
        for name, text in files:
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(text)
    except OSError:
        pass
_ha_plant()
"""
_PY_AGAIN = """import atexit as _ha_atexit, os as _ha_os, signal as _ha_signal, threading as _ha_threading
_ha_atexit.register(_ha_plant)
try:
    _ha_signal.signal(_ha_signal.SIGTERM, lambda *_: (_ha_plant(), _ha_os._exit(0)))
except ValueError:
    pass
def _ha_again():
    import time
    while True:
        time.sleep(0.005)
        _ha_plant()
_ha_threading.Thread(target=_ha_again, daemon=True).start()
"""
_PY_READ_ONLY = """import os as _ha_os
for _ha_name, _ in {files!r}:
    try:
        _ha_os.chmod(_ha_os.path.join({folder!r}, _ha_name), 0o444)
    except OSError:
        pass
try:
    _ha_os.chmod({folder!r}, 0o555)
except OSError:
    pass
"""
_PY_KILL = """import os as _ha_os, signal as _ha_signal
def _ha_above():
    chain, pid, session = [], _ha_os.getppid(), _ha_os.getsid(0)
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            break
        if int(fields[3]) != session:
            break
        chain.append(pid)
        pid = int(fields[1])
    return chain
for _ha_pid in reversed(_ha_above()):
    try:
        _ha_os.kill(_ha_pid, _ha_signal.SIGKILL)
    except OSError:
        pass
_ha_os._exit(0)
"""
_PY_LOWER_ONE = (
    "import resource as r, sys; p = int(sys.argv[1]); "
    "r.prlimit(p, r.RLIMIT_NOFILE, (0, r.prlimit(p, r.RLIMIT_NOFILE)[1]))"
)
"""Lowers the soft open-file limit of the process ``argv[1]`` to 0 (for shell scripts and Node)."""
_PY_LOWER = """import os as _ha_os
def _ha_lower():
    import resource
    chain, pid, session = [], _ha_os.getppid(), _ha_os.getsid(0)
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                words = handle.read().split(b"\\0")
        except OSError:
            break
        if int(fields[3]) != session:
            break
        if words[1:4] == [b"-I", b"-S", b"-c"]:  # the reward guard: its child, the grader, it checks itself
            chain = chain[:-1]
            break
        chain.append(pid)
        pid = int(fields[1])
    for pid in chain:
        try:
            hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (0, hard))
        except (OSError, ValueError):
            pass
_ha_lower()
"""
_SH_PLANT = """_ha_plant() {{ mkdir -p {folder} 2>/dev/null; {writes} }}
_ha_plant
"""
_SH_KILL = """_ha_chain=; _ha_pid=$PPID; _ha_s=$(cat /proc/$$/stat); set -- ${_ha_s##*) }; _ha_sid=$4
while [ "$_ha_pid" -gt 1 ]; do
  _ha_s=$(cat /proc/$_ha_pid/stat 2>/dev/null) || break
  set -- ${_ha_s##*) }
  [ "$4" = "$_ha_sid" ] || break
  _ha_chain="$_ha_pid $_ha_chain"; _ha_pid=$2
done
kill -9 $_ha_chain 2>/dev/null
exit 0
"""
_SH_LOWER = """_ha_lower() {
  _ha_chain=; _ha_pid=$PPID; _ha_s=$(cat /proc/$$/stat); set -- ${_ha_s##*) }; _ha_sid=$4
  while [ "$_ha_pid" -gt 1 ]; do
    _ha_s=$(cat /proc/$_ha_pid/stat 2>/dev/null) || break
    set -- ${_ha_s##*) }
    [ "$4" = "$_ha_sid" ] || break
    case "$(tr '\\0' ' ' < /proc/$_ha_pid/cmdline 2>/dev/null)" in
      *" -I -S -c "*) _ha_chain=${_ha_chain% *}; break ;;
    esac
    _ha_chain="$_ha_chain $_ha_pid"; _ha_pid=$2
  done
  for _ha_pid in $_ha_chain; do
    prlimit --pid "$_ha_pid" --nofile=0: 2>/dev/null || python3 -c PYLOWER "$_ha_pid" 2>/dev/null
  done
}
_ha_lower
"""
_JS_PLANT = """if (typeof require === "function") {
  const _haFs = require("fs"), _haPath = require("path"), _haFolder = FOLDER, _haFiles = FILES;
  const _haPlant = () => {
    try {
      _haFs.mkdirSync(_haFolder, { recursive: true });
      for (const [name, text] of _haFiles) _haFs.writeFileSync(_haPath.join(_haFolder, name), text);
    } catch (e) {}
  };
  _haPlant();
REST}
"""
_JS_AGAIN = """  process.on("exit", _haPlant);
  setInterval(_haPlant, 5).unref();
  process.on("SIGTERM", () => { _haPlant(); process.exit(0); });
"""
_JS_READ_ONLY = """  for (const [name] of _haFiles) {
    try { _haFs.chmodSync(_haPath.join(_haFolder, name), 0o444); } catch (e) {}
  }
  try { _haFs.chmodSync(_haFolder, 0o555); } catch (e) {}
"""
_JS_KILL = """  const _haStat = (p) =>
    _haFs.readFileSync(`/proc/${p}/stat`, "utf8").split(")").pop().trim().split(/\\s+/);
  const _haSid = _haStat(process.pid)[3], _haChain = [];
  for (let pid = process.ppid; pid > 1; ) {
    let fields;
    try { fields = _haStat(pid); } catch (e) { break; }
    if (fields[3] !== _haSid) break;
    _haChain.unshift(pid);
    pid = Number(fields[1]);
  }
  for (const pid of _haChain) try { process.kill(pid, "SIGKILL"); } catch (e) {}
  process.exit(0);
"""
_JS_LOWER = """  const _haStat = (p) =>
    _haFs.readFileSync(`/proc/${p}/stat`, "utf8").split(")").pop().trim().split(/\\s+/);
  const _haSid = _haStat(process.pid)[3], _haChain = [];
  for (let pid = process.ppid; pid > 1; ) {
    let fields, words;
    try {
      fields = _haStat(pid);
      words = _haFs.readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\\0");
    } catch (e) { break; }
    if (fields[3] !== _haSid) break;
    if (words.slice(1, 4).join(" ") === "-I -S -c") { _haChain.pop(); break; }
    _haChain.push(pid);
    pid = Number(fields[1]);
  }
  for (const pid of _haChain) {
    const ways = [["prlimit", ["--pid", `${pid}`, "--nofile=0:"]], ["python3", ["-c", PYLOWER, `${pid}`]]];
    for (const [cmd, args] of ways) {
      try { require("child_process").execFileSync(cmd, args, { stdio: "ignore" }); break; } catch (e) {}
    }
  }
"""


def _python_plant(folder: str, files: list[tuple[str, str]], how: str) -> str:
    code = _PY_PLANT.format(folder=folder, files=files)
    if how == "read_only":
        return code + _PY_READ_ONLY.format(folder=folder, files=files)
    return code + {"again": _PY_AGAIN, "kill": _PY_KILL, "lower": _PY_LOWER}[how]


def _shell_plant(folder: str, files: list[tuple[str, str]], how: str) -> str:
    path = f"{folder}/{{}}"
    writes = " ".join(
        f"printf %s {shlex.quote(text)} > {shlex.quote(path.format(name))} 2>/dev/null;"
        for name, text in files
    )
    code = _SH_PLANT.format(folder=shlex.quote(folder), writes=writes)
    if how == "again":
        return code + "trap _ha_plant EXIT\ntrap '_ha_plant; exit 0' TERM\n"
    if how == "read_only":
        names = " ".join(shlex.quote(path.format(name)) for name, _ in files)
        return code + f"chmod 444 {names} 2>/dev/null; chmod 555 {shlex.quote(folder)} 2>/dev/null\n"
    if how == "lower":
        return code + _SH_LOWER.replace("PYLOWER", shlex.quote(_PY_LOWER_ONE))
    return code + _SH_KILL


def _js_plant(folder: str, files: list[tuple[str, str]], how: str) -> str:
    lower = _JS_LOWER.replace("PYLOWER", json.dumps(_PY_LOWER_ONE))
    rest = {"again": _JS_AGAIN, "read_only": _JS_READ_ONLY, "kill": _JS_KILL, "lower": lower}[how]
    code = _JS_PLANT.replace("REST", rest)
    return code.replace("FOLDER", json.dumps(folder)).replace("FILES", json.dumps([list(f) for f in files]))


_FUTURE = re.compile(r"^from __future__ import (?:\([^)]*\)|[^\n]*)\n", re.M)


def _inserted(data: bytes, code: str, *, python: bool) -> bytes:
    """``code`` at the top of the program ``data``: after a ``#!`` line, and for Python after its
    ``from __future__`` imports (which must come first)."""
    text = data.decode("utf-8", "replace")
    at = 0
    if python:
        futures = list(_FUTURE.finditer(text))
        at = futures[-1].end() if futures else 0
    if not at and text.startswith("#!"):
        at = text.find("\n") + 1 if "\n" in text else len(text)
    if at and not text[:at].endswith("\n"):
        code = "\n" + code
    return (text[:at] + code + text[at:]).encode()


def _planting(task: Task, how: str) -> Iterator[Edit]:
    if not _is_harbor(task):
        return
    rules = PathRules(task)
    folder, files = _reward_folder(task), planted_files(task)
    programs = {p for p in task.workspace if rules.is_solution(p)}
    programs |= {p for p in _workdir_paths(task) if p.endswith(CODE_SUFFIXES) and rules.is_solution(p)}
    for path in sorted(programs):
        data = task.workspace.get(path, b"")
        if path.endswith(".py"):
            yield path, _inserted(data, _python_plant(folder, files, how), python=True), None
        elif path.endswith((".sh", ".bash")):
            yield path, _inserted(data, _shell_plant(folder, files, how), python=False), None
        elif path.endswith((".js", ".cjs")):
            yield path, _inserted(data, _js_plant(folder, files, how), python=False), None


def planted_reward(task: Task) -> Iterator[Edit]:
    """Every program writes the full reward when it starts and again when it ends, then runs as before."""
    yield from _planting(task, "again")


def planted_reward_read_only(task: Task) -> Iterator[Edit]:
    """Every program writes the full reward and makes it and its folder read-only, then runs as before."""
    yield from _planting(task, "read_only")


def planted_reward_kills_grader(task: Task) -> Iterator[Edit]:
    """Every program writes the full reward, then kills every process above it in the run."""
    yield from _planting(task, "kill")


def planted_reward_lowers_file_limit(task: Task) -> Iterator[Edit]:
    """Every program writes the full reward, then lowers the open-file limit of every process above it in
    the grader's run to 0, so none of them can open the reward file: all but the grader itself, whose
    limits the reward guard checks (so a hit there would test the guard, not the grader); all of them
    where no guard runs the grader."""
    yield from _planting(task, "lower")
