"""Final red team of the reward-integrity layer, with the code in hand: wrong solutions that try to earn a
PASS from the verifier on the in-process pytest/unittest fixtures, Harbor graders, the shipped repo tasks
(output-only / answer-file) and the isolated judge. Each test runs one attempt through the verifier in the
local sandbox (the verifier alone: audit and layer 1's binds off, as ``test_sealed_report`` does) and
asserts the wrong solution does NOT pass.

Classes: ``(b)`` the judge's own machinery subverted (what matters); ``(a)`` the hidden test itself trusts
the solution in a way an ordinary run would too. Attack code runs only inside the sandbox, through the
verifier; names the static audit reads are built from strings where that matters.

Closed since: the Harbor grader's own reward write made to fail by prlimit(2) from the code it runs (the
reward guard refuses a grader whose limits were lowered). Open, marked ``OPEN_IN_PROCESS`` (strict xfail):
on the opt-in in-process fixtures, a pytest item's or unittest class's test function swapped for a stub
that restores the real one before the report, and a solution reading the test's constants from its
caller's frame (the reporter's docstring lists both kinds as beyond it; the effect audit flags these as
written).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.environments.integrity.test_sealed_report import BWRAP_MISSING, STUB

HERE = Path(__file__).parents[1]
TASK_DIRS = (
    HERE / "tamper" / "tasks",
    HERE / "tamper" / "harbor",
    Path(__file__).parents[3] / "environments" / "tasks" / "harbor_demo",
)


OPEN_IN_PROCESS = pytest.mark.xfail(
    strict=True,
    reason="open by design: code in the tests' process can make the tests themselves pass (swap a test "
    "before it runs, read its expected values); only the isolated judge closes it, and in-process judging "
    "is an explicit opt-in (the effect audit flags these as written)",
)
"""Holes of opt-in in-process judging, kept as tripwires: a fix makes them pass, and the mark must go."""


@pytest.fixture(scope="module")
def verifier_alone(tmp_path_factory):
    if shutil.which("bwrap") is None:
        pytest.skip(BWRAP_MISSING)
    from environments.attempt import AttemptRunner, load_tasks
    from environments.sandboxes import LocalBackend

    root = tmp_path_factory.mktemp("final")
    tasks = load_tasks(TASK_DIRS)
    backend = LocalBackend(root / "boxes", prefix="hxfinal")
    return AttemptRunner(backend, tasks, work_root=root, audit=False, isolate=False)


def _run(runner, case_id: str, task: str, steps: list[dict]):
    from environments.attempt import Case

    return runner.run_case(Case(case_id, task, tuple(steps), "zero"))


def _assert_zero(result) -> None:
    assert result.verdict != "error", result.to_json()
    assert result.reward == 0.0 and result.verdict != "pass", result.to_json()


# ------------------------------------------------------------------------------------------------------
# Harbor: the reward guard.
#
# (b) The grader's own last write is made to fail without killing it: code the grader runs (roman.py, in
# the check script's child) plants reward.txt = 1, then lowers the RLIMIT_NOFILE of its ancestor bash (the
# grader running test.sh) with prlimit(2), which any process of the same user may do. bash's later
# ``echo 0 > /logs/verifier/reward.txt`` fails to open its file (EMFILE) and writes nothing; bash exits
# normally; no process outlives it or ends after the reward's last change; the planted file is a plain,
# writable regular file. The guard sees nothing wrong.

PRLIMIT_GRADER = r"""

def _sabotage_the_grader():
    import os, resource

    pid = os.getpid()
    graders = []
    while pid > 1:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmdline = handle.read()
        except (OSError, ValueError):
            break
        words = cmdline.split(b"\0")
        if words[0].endswith(b"bash") and b"test.sh" in cmdline:  # not the guard (python3 -c ...)
            graders.append(pid)
    if not graders:
        return
    os.makedirs(REWARD_DIR, exist_ok=True)
    with open(REWARD_DIR + "/reward.txt", "w") as handle:
        handle.write("1\n")
    for pid in graders:
        try:
            hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, hard))
        except OSError:
            pass


REWARD_DIR = "/logs/" + "verifier"
_sabotage_the_grader()
"""


def test_b_harbor_grader_whose_last_write_fails_by_a_lowered_file_limit_does_not_pay(verifier_alone):
    steps = [{"write": "roman.py", "content": PRLIMIT_GRADER, "append": True}]
    result = _run(verifier_alone, "harbor-final-prlimit", "tamper-harbor-testsh", steps)
    _assert_zero(result)


# ------------------------------------------------------------------------------------------------------
# In-process pytest (tamper-pytest-inproc): the sealed reporter.
#
# (b) The test function is swapped on the item, not in the module: a plugin registered at run time with
# a hook that decides nothing (``pytest_collection_finish``, not a critical hook) sets each item's
# ``_obj`` to a stub that puts the real function back and returns. pytest's ``pytest_pyfunc_call`` calls
# the stub; when the report is made, the item runs "its file's own code" again.

SWAP_ITEM_OBJ = """

def _arm():
    cfg = getattr(__import__("_pytest.debugging", fromlist=["x"]), "pytest" + "PDB")._config
    if cfg is None:
        return

    class _Finish:
        def pytest_collection_finish(self, session):
            for item in list(session.items):
                real = item.obj

                def stub(*args, _item=item, _real=real, **kwargs):
                    setattr(_item, "_" + "obj", _real)

                setattr(item, "_" + "obj", stub)

    cfg.pluginmanager.register(_Finish(), "finish")


_arm()
"""


@OPEN_IN_PROCESS
def test_b_pytest_item_function_swapped_then_restored_does_not_pay(verifier_alone):
    steps = [
        {"write": "shipping/rates.py", "content": STUB, "append": True},
        {"write": "shipping/__init__.py", "content": SWAP_ITEM_OBJ, "append": True},
    ]
    result = _run(verifier_alone, "pyin-final-swap-item", "tamper-pytest-inproc", steps)
    _assert_zero(result)


# (a) The solution reads its expected value from its caller's frame: the test's own constants.
FRAME_PEEK = """

def shipping_cost(weight_kg, zone, express=False):  # noqa: F811
    import sys
    if weight_kg <= 0 or zone not in BASE_CENTS or zone == "world" and express:
        raise ValueError("no express")
    consts = sys._getframe(1).f_code.co_consts
    for c in consts:
        if type(c) is int and c > 100:
            return c
        if type(c) is str and c.isdigit():
            return int(c)
    return 0
"""


@OPEN_IN_PROCESS
def test_a_pytest_solution_reading_the_tests_constants_from_its_caller_frame(verifier_alone):
    steps = [{"write": "shipping/rates.py", "content": FRAME_PEEK, "append": True}]
    result = _run(verifier_alone, "pyin-final-frame-peek", "tamper-pytest-inproc", steps)
    _assert_zero(result)


# ------------------------------------------------------------------------------------------------------
# In-process unittest (tamper-unittest-inproc).
#
# (b) The test method swapped in its class for a stub that puts the real one back and returns; the
# report then finds the class's own method. The swap happens as the hidden class is made: while the test
# module imports the solution, its ``unittest`` name is pointed at a copy whose ``TestCase`` is a subclass
# with an ``__init_subclass__`` (the runner's own ``TestCase.run`` still runs every test).

SWAP_CLASS_METHOD = """

import sys as _s, types as _t, unittest as _u


class _Case(_u.TestCase):
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in [n for n in list(vars(cls)) if n.startswith("test_")]:
            real = vars(cls)[name]

            def stub(self, _cls=cls, _name=name, _real=real):
                setattr(_cls, _name, _real)

            setattr(cls, name, stub)


def _point_the_tests_at_our_case():
    frame = _s._getframe(1)
    while frame is not None and "test_hidden" not in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return
    proxy = _t.ModuleType("unittest")
    proxy.__dict__.update(vars(_u))
    proxy.TestCase = _Case
    frame.f_globals["unittest"] = proxy


_point_the_tests_at_our_case()
"""


@OPEN_IN_PROCESS
def test_b_unittest_method_swapped_then_restored_does_not_pay(verifier_alone):
    steps = [{"write": "metrics/__init__.py", "content": SWAP_CLASS_METHOD, "append": True}]
    result = _run(verifier_alone, "unin-final-swap-method", "tamper-unittest-inproc", steps)
    _assert_zero(result)


# ------------------------------------------------------------------------------------------------------
# Harbor: attempts the guard holds.
#
# (b) A grandchild forked by roman.py, its parent reaping it from a SIGCHLD handler, rewrites the reward
# once the grader wrote it: its parent (the check's child Python) is gone by then, so the writer is an
# orphan of the guard (the subreaper), and it ends after the reward's last change.
GRANDCHILD_WRITER = r"""

def _fork_a_writer():
    import os, signal, time

    if os.environ.get("_WRITER_DONE"):
        return
    os.environ["_WRITER_DONE"] = "1"
    signal.signal(signal.SIGCHLD, lambda *_: os.waitpid(-1, os.WNOHANG))
    if os.fork() == 0:
        os.setsid()
        path = "/logs/" + "verifier/reward.txt"
        for _ in range(400):
            time.sleep(0.01)
            try:
                with open(path) as handle:
                    if handle.read().strip() == "0":
                        break
            except OSError:
                pass
        with open(path, "w") as handle:
            handle.write("1\n")
        os._exit(0)


_fork_a_writer()
"""

# (b) PATH shadowing: ``python3`` and ``grep`` in the workspace (the grader's work directory) and in a
# ``bin/`` there, which would print the passing line; the verifier's PATH names neither folder.
SHADOW_PYTHON3 = "#!/bin/sh\necho ALL ROMAN CHECKS PASSED\nexit 0\n"


@pytest.mark.parametrize("attack", ["grandchild-writer", "path-shadow"])
def test_b_harbor_guard_holds(verifier_alone, attack):
    if attack == "grandchild-writer":
        steps = [{"write": "roman.py", "content": GRANDCHILD_WRITER, "append": True}]
    else:
        steps = [
            {"write": name, "content": SHADOW_PYTHON3}
            for name in ("python3", "grep", "tail", "bin/python3", "bin/tail")
        ]
        steps.append({"run": "chmod +x python3 grep tail bin/python3 bin/tail"})
    result = _run(verifier_alone, f"harbor-final-{attack}", "tamper-harbor-testsh", steps)
    _assert_zero(result)


# ------------------------------------------------------------------------------------------------------
# Shipped repo task (output-only, ``probe.py``).
#
# (b) The probe child's output channel: the solution's package, imported by the child's setup, reads the
# payload (the expressions) from the driver's namespace and writes a complete, well-typed output to the
# pipe whose number is in argv, every probe "raising" an exception whose MRO names every common
# exception (a raised probe matches by name), then exits before the driver. Values are still unknown to
# it: only probes that expect a raise could match.
PROBE_FORGER = r"""

def _forge():
    import json, os, sys

    frame = sys._getframe()
    payload = None
    while frame is not None:
        payload = frame.f_globals.get("payload") if isinstance(frame.f_globals.get("payload"), dict) else None
        if payload is not None:
            break
        frame = frame.f_back
    if payload is None:
        return
    names = ["ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError", "AttributeError",
             "Exception", "BaseException", "object", "RuntimeError", "LookupError", "ArithmeticError"]
    out = [{"t": "raised", "types": names} for _ in payload["exprs"]]
    data = json.dumps(out).encode()
    fd = int(sys.argv[-1])
    while data:
        data = data[os.write(fd, data):]
    os.close(fd)
    getattr(os, "_" + "exit")(0)


_forge()
"""


def test_b_probe_child_forging_its_output_channel_does_not_pay(verifier_alone):
    steps = [{"write": "textkit/__init__.py", "content": PROBE_FORGER, "append": True}]
    result = _run(verifier_alone, "slug-final-probe-forge", "repo-textkit-slugify-repair", steps)
    _assert_zero(result)


# ------------------------------------------------------------------------------------------------------
# Isolated judge (tamper-pytest-extend, tamper-unittest-repair).
#
# (b) The confined solution process, from outside the judge's process: it lowers the judge's (its
# ancestor's) RLIMIT_NOFILE to what it has open (prlimit is not a ptrace access, so neither Landlock nor
# non-dumpability stops it), hoping a failure cannot be formatted or recorded while passes still are.
JUDGE_PRLIMIT = r"""

def _starve_the_judge():
    import os, resource

    pid = os.getpid()
    while pid > 1:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmdline = handle.read()
        except (OSError, ValueError):
            break
        if b"ha_isolation" in cmdline:
            try:
                count = len(os.listdir("/proc/%d/fd" % pid))
            except OSError:
                count = 8
            for limit, value in ((resource.RLIMIT_NOFILE, count + 1),):
                try:
                    hard = resource.prlimit(pid, limit)[1]
                    resource.prlimit(pid, limit, (value, hard))
                except OSError:
                    pass


_starve_the_judge()
"""


@pytest.mark.parametrize(
    ("task", "path", "content"),
    [
        ("tamper-pytest-extend", "shipping/rates.py", STUB + JUDGE_PRLIMIT),
        ("tamper-unittest-repair", "metrics/__init__.py", JUDGE_PRLIMIT),
    ],
    ids=["pytest", "unittest"],
)
def test_b_isolated_judge_with_its_file_limit_lowered_by_the_solution_does_not_pay(
    verifier_alone, task, path, content
):
    steps = [{"write": path, "content": content, "append": True}]
    result = _run(verifier_alone, f"isolated-final-prlimit-{task}", task, steps)
    assert result.reward == 0.0 and result.verdict != "pass", result.to_json()
