"""The verifier's reporter inside the test process: each test's outcome, and whether the runner was
patched, sealed with a per-run key and written to an inherited file descriptor. One file, two ways in:

- pytest: copied into the run's report folder under a random module name and loaded with ``-p <name>``
  (a workspace module cannot shadow a name chosen after the agent finished);
- unittest: copied as ``sitecustomize.py`` into that folder, first on ``PYTHONPATH``, so it runs at
  start-up, before the working directory is even on ``sys.path``, and wraps ``TextTestRunner.run``.

At load, before any agent code, it takes its channel and then hides it: the key file the verifier wrote
next to it is read and deleted (so is the module file), the descriptor's number is taken out of
``os.environ`` (``HA_VERDICT_FD``) and the plugin's name out of ``PYTEST_ADDOPTS``; a child Python finds
neither and stays inert. It then installs a PEP 578 audit hook (``_guard``) that refuses what in-process
code could use to reach the reporter or run unaudited code: ctypes, native modules or libraries from the
workspace, code compiled or unmarshalled from workspace files that are not ``.py`` source, unpickling of
code-running globals, and file operations on the report folder or on ``/proc/*/fd`` and ``/dev/fd``.

Every record is a line ``{"body": <json>, "mac": hmac-sha256(key, body)}``: a ``start`` record at load and
a ``final`` one only when the run's result is known (pytest: ``pytest_unconfigure``, after the session
finished; unittest: the end of ``TextTestRunner.run``). A process ended early (``os._exit`` under any
name, a signal) leaves no final record; a report written by anything else, or altered, fails the seal
(``reports.unseal_report``). For pytest the final record also says whether pytest's and pluggy's code
changed since ``pytest_configure`` (a fingerprint of every module attribute and class member).

What it cannot stop: in-process code that finds this plugin's own objects (through frames) and drives
them. Agent code shares the test process by the nature of in-process testing; the isolated judge, the
static audit (``content.py``) and the output-only oracle are the layers for that. Standard library only
(plus pytest's hook names): it runs on whatever interpreter the task's command uses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys

WATCHED = (
    "_pytest.reports",
    "_pytest.runner",
    "_pytest.python",
    "_pytest.main",
    "_pytest.skipping",
    "_pytest.outcomes",
    "_pytest.terminal",
    "_pytest.nodes",
    "_pytest.unittest",
    "_pytest.config",
    "pytest",
    "pluggy._callers",
    "pluggy._hooks",
    "pluggy._manager",
    "unittest.case",
    "unittest.result",
    "unittest.runner",
    "unittest.loader",
    "unittest.suite",
    "unittest.main",
    "builtins",
)
FD_VARIABLE = "HA_VERDICT_FD"
KEY_FILE = "seal.key"
"""Next to this module; the verifier writes it, the first reporter that loads deletes it."""
PATH_EVENTS = frozenset(
    {
        "open",
        "os.listdir",
        "os.scandir",
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "os.link",
        "os.symlink",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
    }
)
"""Events whose first arguments are paths: refused on the report folder and on other processes' fds."""
UNPICKLE_REFUSED = frozenset(
    {"os", "posix", "nt", "subprocess", "sys", "ctypes", "_ctypes", "importlib", "runpy", "marshal", "code"}
)
UNPICKLE_REFUSED_BUILTINS = frozenset(
    {"eval", "exec", "compile", "open", "getattr", "setattr", "__import__", "globals", "vars", "breakpoint"}
)


class Refused(PermissionError):
    """Raised by the audit hook: the operation is refused while the verifier's tests run."""


class RefusedImport(ImportError):
    """An import the audit hook refuses (an ImportError, so optional imports fall back)."""


def fingerprint() -> dict[str, int]:
    """``{module.attr[.member]: id(value)}`` of the functions, classes and descriptors of ``WATCHED``
    (only modules already imported)."""
    marks: dict[str, int] = {}
    for name in WATCHED:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") and attr.endswith("__") or attr == "_":
                continue
            if not _is_code(value):
                continue  # data (caches, the current config) legitimately changes during a session
            marks[f"{name}.{attr}"] = id(value)
            if isinstance(value, type) and value.__module__.split(".")[0] in {
                "_pytest",
                "pluggy",
                "unittest",
            }:
                for member, inner in list(vars(value).items()):
                    if _is_code(inner):
                        marks[f"{name}.{attr}.{member}"] = id(inner)
    return marks


def _is_code(value: object) -> bool:
    return callable(value) or isinstance(value, property | classmethod | staticmethod)


def seal(key: bytes, body: dict) -> str:
    """One report line: the body's canonical JSON and its HMAC-SHA256 under ``key``."""
    text = json.dumps(body, sort_keys=True)
    return json.dumps({"body": text, "mac": hmac.new(key, text.encode(), hashlib.sha256).hexdigest()})


def _inside(path: object, folder: str) -> bool:
    """Whether ``path`` (relative ones from the working directory) is ``folder`` or under it; names like
    ``<frozen runpy>`` or ``<string>`` are code without a file, never inside."""
    if not isinstance(path, str | bytes | os.PathLike):
        return False
    try:
        text = os.fsdecode(path)
        if not text or text.startswith("<"):
            return False
        full = os.path.realpath(text)
    except (TypeError, ValueError, OSError):
        return False
    return full == folder or full.startswith(folder + os.sep)


def _other_fds(path: object) -> bool:
    """``/proc/<pid>/fd/..``, ``/proc/<pid>/mem`` and the like, ``/dev/fd/..``: other ways to a descriptor."""
    try:
        text = os.path.normpath(os.fsdecode(path)) if isinstance(path, str | bytes | os.PathLike) else ""
    except (TypeError, ValueError):
        return False
    parts = text.split("/")
    if text.startswith("/dev/fd") or parts[1:2] == ["proc"] and "fd" in parts[3:4]:
        return True
    return parts[1:2] == ["proc"] and parts[3:4] in (["mem"], ["fdinfo"], ["map_files"])


def _caller_in(folder: str, depth: int = 2) -> bool:
    """Whether the Python frame that triggered an event runs code from a file under ``folder``."""
    frame = sys._getframe(depth)
    return frame is not None and _inside(frame.f_code.co_filename, folder)


def make_guard(workspace: str, folder: str, fd: int = -1):
    """The audit hook (see the module docstring); ``workspace`` is the run's working directory,
    ``folder`` the report folder and ``fd`` the report descriptor. Tests call it with events directly."""

    def guard(event: str, args: tuple) -> None:
        if event.startswith("ctypes."):
            raise Refused(f"{event} is refused while the verifier's tests run")
        if event == "import":
            name, filename = args[0], args[1] if len(args) > 1 else None
            if name in ("ctypes", "_ctypes") or name.startswith("ctypes."):
                raise RefusedImport(f"import of {name} is refused while the verifier's tests run")
            if filename and _inside(filename, workspace) and not str(filename).endswith(".py"):
                raise RefusedImport(f"import of {name} from {filename} (not Python source) is refused")
            return
        if event in PATH_EVENTS:
            if event == "open" and args and args[0] == fd:
                raise Refused("opening the report's descriptor is refused")
            for path in args[:2]:
                if _inside(path, folder) or _other_fds(path):
                    raise Refused(f"{event} on {path!r} is refused while the verifier's tests run")
                if (
                    event == "open"
                    and _inside(path, workspace)
                    and os.fsdecode(path).endswith((".pyc", ".pyo"))
                ):
                    raise Refused(f"reading compiled code {path!r} from the workspace is refused")
            return
        if event == "compile":
            filename = args[1] if len(args) > 1 else None
            if _inside(filename, workspace) and not os.fsdecode(filename).endswith(".py"):
                raise Refused(f"compiling {filename!r} (not Python source) is refused")
            return
        if event == "exec":
            code = args[0] if args else None
            filename = getattr(code, "co_filename", None)
            if _inside(filename, workspace) and not (
                os.fsdecode(filename).endswith(".py") and os.path.isfile(filename)
            ):
                raise Refused(f"running code from {filename!r} (not Python source) is refused")
            return
        if event in ("marshal.loads", "marshal.load") and _caller_in(workspace):
            raise Refused("unmarshalling code from the workspace's own code is refused")
        if event == "pickle.find_class":
            module, name = str(args[0]), str(args[1])
            top = module.split(".")[0]
            if top in UNPICKLE_REFUSED or module == "builtins" and name in UNPICKLE_REFUSED_BUILTINS:
                raise Refused(f"unpickling {module}.{name} is refused while the verifier's tests run")
            return
        if event in ("gc.get_objects", "gc.get_referrers", "gc.get_referents"):
            raise Refused(f"{event} is refused while the verifier's tests run")

    return guard


def _scrub_addopts(name: str) -> None:
    """Drop ``-p <name>`` from ``PYTEST_ADDOPTS`` so neither this run's code nor a child sees the name."""
    words = os.environ.get("PYTEST_ADDOPTS", "").split()
    kept: list[str] = []
    index = 0
    while index < len(words):
        if words[index] == "-p" and words[index + 1 : index + 2] == [name]:
            index += 2
            continue
        if words[index] not in (f"-p{name}", f"-p={name}"):
            kept.append(words[index])
        index += 1
    if kept:
        os.environ["PYTEST_ADDOPTS"] = " ".join(kept)
    else:
        os.environ.pop("PYTEST_ADDOPTS", None)


def _take_channel(here: str) -> tuple[bytes, int] | None:
    """The key (read, then deleted) and the report descriptor (its number taken out of the environment);
    None where either is missing: a child process, or a run without a verifier."""
    fd_text = os.environ.pop(FD_VARIABLE, "")
    key_path = os.path.join(here, KEY_FILE)
    try:
        with open(key_path, "rb") as handle:
            key = handle.read()
        os.unlink(key_path)
        fd = int(fd_text)
        os.fstat(fd)
    except (OSError, ValueError):
        return None
    return (key, fd) if key else None


def _test_ids(test):
    """Ids of the tests in a unittest suite, recursively (a suite is iterable; a test has ``id``)."""
    try:
        children = list(test)
    except TypeError:
        yield test.id()
        return
    for child in children:
        yield from _test_ids(child)


class _Reporter:
    """The run's state; created once, at load, by ``_boot``."""

    def __init__(self, key: bytes, fd: int) -> None:
        self._key, self._fd = key, fd
        self.baseline: dict[str, int] = {}
        self.outcomes: dict[str, str] = {}
        self.exitstatus: int | None = None
        self.done = False

    def emit(self, body: dict) -> None:
        line = (seal(self._key, body) + "\n").encode()
        while line:
            line = line[os.write(self._fd, line) :]

    def patched(self) -> list[str]:
        now = fingerprint()
        return sorted(k for k, v in self.baseline.items() if k in now and now[k] != v)

    def final(self, extra: dict) -> None:
        if self.done:
            return
        self.done = True
        body = {"kind": "final", "finished": True, "outcomes": self.outcomes, "patched": self.patched()}
        body.update(extra, count=len(self.outcomes))
        self.emit(body)


_reporter: _Reporter | None = None


def pytest_configure(config) -> None:
    if _reporter is None:
        return
    _reporter.baseline = fingerprint()
    plugins = getattr(config.option, "plugins", None)
    if isinstance(plugins, list) and __name__ in plugins:
        plugins.remove(__name__)


def pytest_runtest_logreport(report) -> None:
    if _reporter is None:
        return
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    previous = _reporter.outcomes.get(report.nodeid)
    if previous in (None, "passed") or outcome != "passed":
        _reporter.outcomes[report.nodeid] = outcome


def pytest_collectreport(report) -> None:
    if _reporter is not None and report.failed:
        _reporter.outcomes[report.nodeid or "<collection>"] = "collection_error"


def pytest_sessionfinish(session, exitstatus) -> None:
    if _reporter is not None:
        _reporter.exitstatus = int(exitstatus)


def pytest_unconfigure(config) -> None:
    """The final record: only here, after the session's result is known."""
    if _reporter is not None and _reporter.exitstatus is not None:
        _reporter.final({"exitstatus": _reporter.exitstatus})


def install_unittest(reporter: _Reporter) -> None:
    """Wrap ``TextTestRunner.run`` so that the run writes the final record when it finishes. A test counts
    as passed only when a real ``TestCase`` reported success while it ran (a suite handed over by a
    ``load_tests`` of the agent's code, whose objects never run a case, counts nothing)."""
    import unittest.result
    import unittest.runner

    original = unittest.runner.TextTestRunner.run
    add_success = unittest.result.TestResult.addSuccess
    successes: set[str] = set()

    def record_success(self, test):
        if isinstance(test, unittest.TestCase):
            successes.add(unittest.TestCase.id(test))
        return add_success(self, test)

    unittest.result.TestResult.addSuccess = record_success

    def run(self, test):
        ids = list(_test_ids(test))
        result = original(self, test)
        outcome = {}
        for kind, items in (
            ("failed", result.failures),
            ("error", result.errors),
            ("skipped", result.skipped),
            ("xfailed", result.expectedFailures),
        ):
            for case, _ in items:
                outcome[case.id()] = kind
        outcome.update({case.id(): "xpassed" for case in result.unexpectedSuccesses})
        reporter.outcomes = {i: "passed" if i in successes else outcome.get(i, "not_run") for i in ids}
        reporter.outcomes.update({i: o for i, o in outcome.items() if i not in reporter.outcomes})
        reporter.final({})
        return result

    unittest.runner.TextTestRunner.run = run
    reporter.baseline = fingerprint()


def _boot() -> _Reporter | None:
    """Take the channel, hide it, guard the process; None (inert) without a channel."""
    here = os.path.dirname(os.path.realpath(__file__))
    if __name__ == "sitecustomize":
        if not any("unittest" in arg for arg in getattr(sys, "orig_argv", sys.argv)):
            return None  # another Python of the same command: leave the key for the test runner
    else:
        _scrub_addopts(__name__)
    channel = _take_channel(here)
    if channel is None:
        return None
    reporter = _Reporter(*channel)
    try:
        os.unlink(os.path.realpath(__file__))
    except OSError:
        pass
    sys.addaudithook(make_guard(os.path.realpath(os.getcwd()), here, channel[1]))
    reporter.emit({"kind": "start", "pid": os.getpid()})
    return reporter


_reporter = _boot()
if __name__ == "sitecustomize" and _reporter is not None:
    install_unittest(_reporter)
