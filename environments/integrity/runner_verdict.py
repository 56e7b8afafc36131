"""The verifier's reporter inside the test process: each test's outcome sealed with a per-run key the moment
the runner produces it, written to an inherited file descriptor, and a final record once the run ended.
One file, two ways in:

- pytest: copied into the run's report folder under a random module name and loaded with ``-p <name>``
  (a workspace module cannot shadow a name chosen after the agent finished);
- unittest: copied as ``sitecustomize.py`` into that folder, first on ``PYTHONPATH``, so it runs at
  start-up, before the working directory is even on ``sys.path``, and wraps ``TextTestRunner.run`` and the
  ``TestResult.add*`` methods.

At load, before any agent code, it takes its channel and hides it: the key file the verifier wrote next to
it is read into a buffer that is zeroed once the key is absorbed, and deleted (so is the module file); the
descriptor's number is taken out of ``os.environ`` (``HA_VERDICT_FD``) and the plugin's name out of
``PYTEST_ADDOPTS``; a child Python finds neither and stays inert. The process is made non-dumpable
(``prctl``), so no other process of the same user can read its memory.

Nothing agent code can reach holds the key or a way to use it. The key lives only in the *kernel*
(``make_kernel``), a PEP 578 audit hook that is a closure: no module global, no ``sys.modules`` entry, no
plugin object refers to it (the plugin module's hooks hold nothing; the module also leaves ``sys.modules``
once pytest registered it, ``sitecustomize`` once the tests start), the interpreter does not expose its
audit hooks, and the kernel never raises, never runs code of the process (every built-in it uses is bound
at load, objects are read through their type's own descriptors after an exact type check, the garbage
collector is paused while it works) and so never leaves a frame where code could find it. The plugin's
hooks only raise an event (``sys.audit(EVENT, ...)``); the kernel seals a record only for the genuine
caller: the frame that raised the event must run the reporter's own function for that event, and a passing
test must come from the runner itself and be the test it says it is (pytest: ``pluggy`` called from
``_pytest.runner.call_and_report`` with the very report that frame made, for an item whose function is the
test file's own code under the test's name; unittest: ``TestCase.run`` with the very test and result, whose
method is its test file's own code). The kernel reads the report's fields itself. Every line is
``{"seq": n, "body": <json>, "mac": hmac-sha256(key, "<n>\\n" + body)}``: a ``start`` record at load, an
``outcome`` record per test phase as it is reported, and a ``final`` record only when the run ended
(pytest: ``pytest_unconfigure`` after pytest's own ``pytest_sessionfinish``; unittest: the end of the
``TextTestRunner.run`` that ``unittest.main`` started) that counts the outcome records before it. A process
ended early (``os._exit`` under any name, a signal) leaves no final record; a report cut short, reordered,
written by anything else or altered fails the seal (``reports.unseal_report``). The kernel also computes
what the final record says about the runner: ``patched`` (a function, class member or descriptor of the
runner's modules and ``builtins`` replaced, removed or added since load, or since pytest configured itself
for what pytest's own plugins set up) and ``tampered`` (pytest: a hook implementation of a hook that
decides outcomes from code that was not loaded by the import system from the interpreter's library
folders or the task's test files, pluggy's or pytest's hook machinery replaced or overridden, a plugin
posing as a conftest). Code is the task's test code when its file is test code by the project's path rules
(``integrity.paths``: the verifier never takes those from the agent) and did not change after load.

A second audit hook, the *guard* (``make_guard``), refuses what in-process code could use to reach the
kernel or run unaudited code: a frame whose callers run the kernel's code (``sys._getframe``, a
traceback's, generator's or coroutine's frame), ``sys._current_frames``, trace, profile and monitoring
callbacks, new audit hooks, new functions made from code objects, swapping a library function's code or
defaults, ctypes and the test C modules, native modules or libraries from the workspace, code compiled or
unmarshalled from workspace files that are not ``.py`` source, unpickling of code-running globals, ``gc``'s
object walks, and file operations on the report folder, on the report descriptor, or on another way to a
process's memory or descriptors (``/proc/*/mem``, ``fd``, ``fdinfo``, ``map_files``, ``/dev/fd``; links are
resolved with system calls only). Its frames are in the tracebacks of what it refuses, so it holds nothing
they could change (no closure, no global name; see ``make_guard``).

What it cannot stop (the isolated judge, the static audit in ``content.py`` and the output-only oracle are
the layers for these): code in the tests' process making the tests themselves pass (reading a test's
expected values from its caller's frame; changing names in a test module's namespace, objects the tests
use or fixtures; a test's function swapped for one of its own that puts the real one back before the
report); a library's own data changed so that its trusted code misbehaves; and reading the process's own
memory through a path the guard never sees (an ``openat`` relative to another directory's descriptor, a
link swapped between the guard's check and the open): an audit event names the path, not the descriptor
it is relative to, and is not atomic with the open. Standard library only (plus pytest's hook names): it
runs on whatever interpreter the task's command uses (Python 3.10 and later).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys

EVENT = "hav.verdict"
"""The audit event the plugin's hooks raise for the kernel (a name is no secret: the caller is checked)."""
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
    "_pytest.fixtures",
    "_pytest.assertion.rewrite",
    "pytest",
    "pluggy._callers",
    "pluggy._hooks",
    "pluggy._manager",
    "pluggy._caller",
    "pluggy._impl",
    "pluggy._execution",
    "unittest.case",
    "unittest.result",
    "unittest.runner",
    "unittest.loader",
    "unittest.suite",
    "unittest.main",
    "importlib._bootstrap",
    "importlib._bootstrap_external",
    "runpy",
    "builtins",
)
"""Modules whose functions, classes' members and descriptors the kernel fingerprints at load and again at
the end: a replaced, removed or added one is ``patched``."""
CLASS_PACKAGES = frozenset({"_pytest", "pluggy", "unittest", "pytest", "importlib", "runpy", "builtins"})
"""Classes of these packages, found in ``WATCHED`` modules, are fingerprinted member by member."""
CRITICAL_HOOKS = frozenset(
    {
        "pytest_runtestloop",
        "pytest_runtest_protocol",
        "pytest_runtest_setup",
        "pytest_runtest_call",
        "pytest_runtest_teardown",
        "pytest_pyfunc_call",
        "pytest_runtest_makereport",
        "pytest_runtest_logreport",
        "pytest_collection",
        "pytest_collection_modifyitems",
        "pytest_collect_file",
        "pytest_pycollect_makemodule",
        "pytest_pycollect_makeitem",
        "pytest_make_collect_report",
        "pytest_generate_tests",
        "pytest_fixture_setup",
        "pytest_collectreport",
    }
)
"""pytest hooks whose implementations decide what runs and what a report says: each must be trusted code."""
TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing", "e2e"})
"""Folders whose files are test code by the project's path rules (``integrity.paths``): the verifier takes
them from the task, never from the agent."""
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
"""Events whose first arguments are paths: refused on the report folder and on other ways to a process's
memory or descriptors, and refused on the report's descriptor when given one."""
PROC_PARTS = frozenset({"mem", "fd", "fdinfo", "map_files"})
"""Entries of ``/proc/<pid>/`` (and of its tasks) that reach a process's memory or descriptors."""
UNPICKLE_REFUSED = frozenset(
    {"os", "posix", "nt", "subprocess", "sys", "ctypes", "_ctypes", "importlib", "runpy", "marshal", "code"}
)
UNPICKLE_REFUSED_BUILTINS = frozenset(
    {"eval", "exec", "compile", "open", "getattr", "setattr", "__import__", "globals", "vars", "breakpoint"}
)
REFUSED_EVENTS = frozenset(
    {
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "sys.monitoring.register_callback",
        "function.__new__",
        "cpython.remote_debugger_script",
        "sys.remote_exec",
    }
)
"""Ways to another thread's frames, to a callback on every frame, or to a function with a library's code
and one's own globals: refused while the verifier's tests run."""
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
REFUSED_MODULES = ("_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_testsinglephase")
REFUSED_MODULES += ("_testclinic", "_testimportmultiple", "_xxsubinterpreters", "_xxinterpchannels")


class Refused(PermissionError):
    """Raised by the audit hook: the operation is refused while the verifier's tests run."""


class RefusedImport(ImportError):
    """An import the audit hook refuses (an ImportError, so optional imports fall back)."""


class RefusedHook(RuntimeError):
    """A new audit hook: the interpreter suppresses this error and does not add the hook."""


def seal(key: bytes, body: dict) -> str:
    """One unnumbered report line (Node's reporter writes these): the body's JSON and its HMAC-SHA256."""
    text = json.dumps(body, sort_keys=True)
    return json.dumps({"body": text, "mac": hmac.new(key, text.encode(), hashlib.sha256).hexdigest()})


def seal_record(key: bytes, seq: int, body: dict) -> str:
    """One numbered report line, as the kernel writes them: the MAC covers the number and the body."""
    text = json.dumps(body, sort_keys=True)
    mac = hmac.new(key, f"{seq}\n{text}".encode(), hashlib.sha256).hexdigest()
    return json.dumps({"seq": seq, "body": text, "mac": mac})


def make_guard(
    workspace: str,
    folder: str,
    fd: int = -1,
    guarded: frozenset[int] = frozenset(),
    library: frozenset[int] = frozenset(),
):
    """The guard audit hook (see the module docstring). ``workspace`` is the run's working directory,
    ``folder`` the report folder, ``fd`` the report descriptor, ``guarded`` the ids of the kernel's code
    objects (a frame running one is never handed out) and ``library`` the ids of the code objects loaded
    before the run and of the reporter's own (their functions' code and defaults cannot be swapped). Tests
    call it with events directly.

    Its frames end up in the tracebacks of what it refuses, so it holds nothing that could be changed
    through them: it and its helpers are functions without closures and without a global or built-in
    name, everything they use is a positional default (a tuple; swapping it is refused), made here. The
    one mutable object, the set of threads inside a frame check, only turns that check off."""
    import _thread
    import types

    errors = (OSError, ValueError, TypeError)
    frame_t, tb_t, func_t = types.FrameType, types.TracebackType, types.FunctionType
    gens = ((tb_t, "tb_frame"), (types.GeneratorType, "gi_frame"), (types.CoroutineType, "cr_frame"))
    gens += ((types.AsyncGeneratorType, "ag_frame"),)

    def text(path, _t=type, _s=str, _b=bytes, _i=int, _sub=issubclass, _fspath=os.fspath, _err=Exception):
        """A path argument as an exact ``str``, or None (a descriptor number, or not a path)."""
        kind = _t(path)
        if kind is _s:
            return path
        if kind is _b:
            return path.decode("utf-8", "surrogateescape")
        if _sub(kind, _i):
            return None
        if _sub(kind, _s):
            return "".join((path,))
        if _sub(kind, _b):
            return b"".join((path,)).decode("utf-8", "surrogateescape")
        try:
            value = _fspath(path)
        except _err:
            return None
        if _t(value) is _b:
            return value.decode("utf-8", "surrogateescape")
        return "".join((value,)) if _sub(_t(value), _s) else None

    def resolve(path, _getcwd=os.getcwd, _lstat=os.lstat, _readlink=os.readlink, _err=errors):
        """Absolute, without ``.``/``..``, links resolved (at most 40) with system calls only."""
        if not path.startswith("/"):
            path = _getcwd() + "/" + path
        pending = path.split("/")
        pending.reverse()
        done = []
        links = 0
        while pending:
            part = pending.pop()
            if part == "" or part == ".":
                continue
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join(done) + ("/" if done else "") + part
            try:
                mode = _lstat(here).st_mode
            except _err:
                done.append(part)
                continue
            if mode & 0o170000 == 0o120000 and links < 40:
                links += 1
                try:
                    target = _readlink(here)
                except _err:
                    done.append(part)
                    continue
                if target.startswith("/"):
                    done = []
                more = target.split("/")
                more.reverse()
                pending.extend(more)
                continue
            done.append(part)
        return "/" + "/".join(done)

    def inside(path, root):
        return path == root or path.startswith(root + "/")

    def reaches_memory(full, _parts=PROC_PARTS):
        """``/proc/<pid>/{mem,fd,...}`` (or a task's), or ``/dev/fd``: another way to a descriptor."""
        parts = full.split("/")
        if parts[1:3] == ["dev", "fd"]:
            return True
        if parts[1:2] != ["proc"]:
            return False
        for part in parts[3:]:
            if part in _parts:
                return True
        return False

    def in_workspace(name, _text=text, _resolve=resolve, _inside=inside, _workspace=workspace):
        name = _text(name)
        if name is None or name.startswith("<") or name == "":
            return False
        return _inside(_resolve(name), _workspace)

    def foreign_file(name, _text=text, _in_workspace=in_workspace, _stat=os.stat, _err=errors):
        """A file of the workspace that is not Python source (a name that is no file is not)."""
        if not _in_workspace(name):
            return False
        name = _text(name)
        try:
            regular = _stat(name).st_mode & 0o170000 == 0o100000
        except _err:
            return False
        return regular and not name.endswith(".py")

    def frame_request(
        event,
        args,
        _ident=_thread.get_ident,
        _getframe=sys._getframe,
        _busy=set(),  # noqa: B006 - the one mutable default, on purpose (see the docstring)
        _t=type,
        _id=id,
        _getattr=getattr,
        _frame=frame_t,
        _gens=gens,
        _guarded=guarded,
        _refused=Refused,
    ):
        """A frame is handed out only when none of its callers runs the kernel's code, unless the kernel
        itself asks (``sys._getframe``'s event carries the frame returned from Python 3.11 on, the asker's
        before)."""
        tid = _ident()
        if tid in _busy:
            return
        _busy.add(tid)
        try:
            asker = _getframe(2)  # frame_request <- guard <- the code that asked
            if asker is not None and _id(asker.f_code) in _guarded:
                return
            if event == "sys._getframe":
                start = args[0] if args else None
            else:
                obj, attr, kind, start = args[0], args[1], _t(args[0]), None
                for owner, name in _gens:
                    if kind is owner and attr == name:
                        start = _getattr(obj, attr)
                if start is None:
                    return
            while start is not None:
                if _t(start) is not _frame:
                    return
                if _id(start.f_code) in _guarded:
                    raise _refused("a frame of the verifier's reporter is not handed out")
                start = start.f_back
        finally:
            _busy.discard(tid)

    def check_path(
        event, value, _text=text, _resolve=resolve, _inside=inside, _memory=reaches_memory, _folder=folder
    ):
        raw = _text(value)
        if raw is None or raw == "" or raw.startswith("<"):
            return ""
        full = _resolve(raw)
        if _inside(full, _folder) or _memory(full):
            return f"{event} on {raw!r} is refused while the verifier's tests run"
        if not raw.startswith("/") and "mem" in raw.split("/"):
            return f"{event} on {raw!r} is refused while the verifier's tests run"
        return ""

    def guard(
        event,
        args,
        _t=type,
        _s=str,
        _i=int,
        _id=id,
        _len=len,
        _getattr=getattr,
        _getframe=sys._getframe,
        _func=func_t,
        _frame_attrs=FRAME_ATTRS,
        _refused_events=REFUSED_EVENTS,
        _refused_modules=REFUSED_MODULES,
        _path_events=PATH_EVENTS,
        _pickle_modules=UNPICKLE_REFUSED,
        _pickle_builtins=UNPICKLE_REFUSED_BUILTINS,
        _swaps=("__code__", "__defaults__", "__kwdefaults__"),
        _gc=("gc.get_objects", "gc.get_referrers", "gc.get_referents"),
        _library=library,
        _fd=fd,
        _frame_request=frame_request,
        _check_path=check_path,
        _text=text,
        _in_workspace=in_workspace,
        _foreign_file=foreign_file,
        _refused=Refused,
        _refused_import=RefusedImport,
        _refused_hook=RefusedHook,
    ):
        if (
            event == "sys._getframe"
            or event == "object.__getattr__"
            and _len(args) > 1
            and _t(args[1]) is _s
            and args[1] in _frame_attrs
        ):
            _frame_request(event, args)
            return
        if event == "object.__getattr__":
            return
        if event.startswith("ctypes.") or event in _refused_events:
            raise _refused(f"{event} is refused while the verifier's tests run")
        if event == "sys.addaudithook":
            raise _refused_hook("a new audit hook is refused while the verifier's tests run")
        if event == "object.__setattr__":
            if (
                _len(args) > 1
                and _t(args[0]) is _func
                and args[1] in _swaps
                and _id(args[0].__code__) in _library
            ):
                raise _refused(f"swapping a library function's {args[1]} is refused")
            return
        if event == "import":
            name, filename = args[0], args[1] if _len(args) > 1 else None
            if _t(name) is not _s:
                return
            if (
                name in ("ctypes", "_ctypes")
                or name.startswith("ctypes.")
                or name.startswith(_refused_modules)
            ):
                raise _refused_import(f"import of {name} is refused while the verifier's tests run")
            if filename and _in_workspace(filename) and not (_text(filename) or "").endswith(".py"):
                raise _refused_import(f"import of {name} from {filename} (not Python source) is refused")
            return
        if event in _path_events:
            if args and _t(args[0]) is _i and args[0] == _fd:
                raise _refused(f"{event} on the report's descriptor is refused")
            if event == "os.symlink" and args:
                target = _text(args[0])
                if target is not None and (
                    "/proc" in target or target.startswith("/dev/fd") or "mem" in target.split("/")
                ):
                    raise _refused(f"a link to {target!r} is refused while the verifier's tests run")
            for path in args[:2]:
                why = _check_path(event, path)
                if why:
                    raise _refused(why)
                if event == "open" and _in_workspace(path) and (_text(path) or "").endswith((".pyc", ".pyo")):
                    raise _refused(f"reading compiled code {path!r} from the workspace is refused")
            return
        if event == "compile":
            filename = args[1] if _len(args) > 1 else None
            if _foreign_file(filename):
                raise _refused(f"compiling {filename!r} (not Python source) is refused")
            return
        if event == "exec":
            filename = _getattr(args[0], "co_filename", None) if args else None
            if _foreign_file(filename):
                raise _refused(f"running code from {filename!r} (not Python source) is refused")
            return
        if event == "marshal.loads" or event == "marshal.load":
            caller = _getframe(1)
            if caller is not None and _in_workspace(caller.f_code.co_filename):
                raise _refused("unmarshalling code from the workspace's own code is refused")
            return
        if event == "pickle.find_class":
            module, name = _s(args[0]), _s(args[1])
            if module.split(".")[0] in _pickle_modules or module == "builtins" and name in _pickle_builtins:
                raise _refused(f"unpickling {module}.{name} is refused while the verifier's tests run")
            return
        if event in _gc:
            raise _refused(f"{event} is refused while the verifier's tests run")

    return guard


def make_kernel(
    key: bytearray,
    fd: int,
    *,
    runner: str,
    workspace: str,
    roots: tuple[str, ...],
    boot_ns: int,
    trusted: dict[int, object],
    reporter: dict[str, object],
    refs: dict[str, object],
    watched: tuple[str, ...] = WATCHED,
):
    """The kernel audit hook (see the module docstring): it absorbs ``key`` (and zeroes it), writes the
    start record, and from then on seals only what the genuine reporter code hands it. ``trusted`` maps
    the ids of code objects loaded before any agent code to them (the kernel adds library and conftest
    code the import system loads later); ``reporter`` maps each op to the code object of the reporter
    function allowed to raise it; ``refs`` holds the runner's classes and code objects. Nothing it does
    after load calls a function code in the process could replace, or runs such code: every built-in it
    uses is bound here, objects are read through their type's own descriptors after an exact type check,
    and it never raises."""
    import _thread
    import gc
    import types

    try:
        from _json import encode_basestring_ascii as encode_string
    except ImportError:  # pragma: no cover - every CPython build has _json
        encode_string = None

    _type, _id, _len, _str, _int = type, id, len, str, int
    _list, _tuple, _dict, _set, _frozenset = list, tuple, dict, set, frozenset
    _sorted, _callable, _sub, _range, _ord, _hex = sorted, callable, issubclass, range, ord, "%04x"
    _int_add, _getattr = int.__add__, getattr
    _mro = type.__dict__["__mro__"].__get__
    test_dirs = TEST_DIRS
    _getframe, _write, _stat = sys._getframe, os.write, os.stat
    _gc_on, _gc_off, _gc_enabled = gc.enable, gc.disable, gc.isenabled
    _clear_tb = BaseException.__dict__["__traceback__"].__set__
    _mod_dict = types.ModuleType.__dict__["__dict__"].__get__
    _cls_dict = type.__dict__["__dict__"].__get__
    _type_qualname = type.__dict__["__qualname__"].__get__

    def _qualname(cls: object) -> str:
        """A class's qualified name as an exact ``str`` (``"a" + s`` would run a ``str`` subclass's
        ``__radd__``)."""
        name = _type_qualname(cls)
        return "".join((name,)) if _sub(_type(name), _str) else "?"

    code_t, func_t, method_t, frame_t, module_t = (
        types.CodeType,
        types.FunctionType,
        types.MethodType,
        types.FrameType,
        types.ModuleType,
    )
    proxy_t = _type(_cls_dict(object))
    locals_t = _type(_getframe().f_locals)
    descriptors = (property, classmethod, staticmethod)
    sys_modules = sys.modules
    lock = _thread.RLock()
    keep: list[object] = []  # every object whose id the kernel remembers stays alive

    # The key becomes two pre-keyed SHA-256 states (HMAC's inner and outer); the buffers are zeroed.
    sha = hashlib.sha256
    size = _len(key)
    pad_in, pad_out = bytearray(64), bytearray(64)
    for i in _range(64):
        byte = key[i] if i < size else 0
        pad_in[i], pad_out[i] = byte ^ 0x36, byte ^ 0x5C
    inner, outer = sha(pad_in), sha(pad_out)
    for buffer in (key, pad_in, pad_out):
        for i in _range(_len(buffer)):
            buffer[i] = 0
    del key, pad_in, pad_out, buffer, byte

    def mac(data: bytes) -> str:
        first = inner.copy()
        first.update(data)
        second = outer.copy()
        second.update(first.digest())
        return second.hexdigest()

    def quote(value: str) -> str:
        if encode_string is not None:
            return encode_string(value)
        out = ['"']
        for char in value:
            code = _ord(char)
            if char == '"' or char == "\\":
                out.append("\\" + char)
            elif 0x20 <= code < 0x7F:
                out.append(char)
            elif code > 0xFFFF:
                code -= 0x10000
                out.append("\\u" + _hex % (0xD800 | code >> 10) + "\\u" + _hex % (0xDC00 | code & 0x3FF))
            else:
                out.append("\\u" + _hex % code)
        out.append('"')
        return "".join(out)

    def dumps(value: object) -> str:
        kind = _type(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if kind is _int:
            return _str(value)
        if kind is _str:
            return quote(value)  # type: ignore[arg-type]
        if kind is _list or kind is _tuple:
            parts = []
            for item in value:  # type: ignore[attr-defined]
                parts.append(dumps(item))
            return "[" + ", ".join(parts) + "]"
        if kind is _dict:
            parts = []
            for name in _sorted(value):  # type: ignore[call-overload]
                parts.append(quote(name) + ": " + dumps(value[name]))  # type: ignore[index]
            return "{" + ", ".join(parts) + "}"
        return "null"

    state: dict[str, object] = {"seq": 0, "outcomes": 0, "done": False, "exit": None}
    state.update(config=None, pm=None, relay=None, hook=None)
    tampered: list[str] = []
    unproven: list[str] = []

    def emit(body: dict) -> None:
        text = dumps(body)
        with lock:
            seq = state["seq"]
            number = _str(seq)
            seal = mac(number.encode() + b"\n" + text.encode())
            line = '{"seq": ' + number + ', "body": ' + quote(text) + ', "mac": "' + seal + '"}\n'
            data = line.encode()
            while data:
                data = data[_write(fd, data) :]
            state["seq"] = seq + 1
            if body.get("kind") == "outcome":
                state["outcomes"] = state["outcomes"] + 1  # type: ignore[operator]

    def fresh(mapping: object) -> dict:
        """A dict's (or class namespace's) entries under exact-``str`` keys, copied: later lookups run
        no code of the process (a key of a ``str`` subclass could define ``__eq__``)."""
        out: dict = {}
        kind = _type(mapping)
        if kind is not _dict and kind is not proxy_t:
            return out
        for name, value in mapping.items():  # type: ignore[attr-defined]
            if _type(name) is _str:
                out[name] = value
        return out

    slot_types = (_type(type.__dict__["__dict__"]), _type(types.ModuleType.__dict__["__dict__"]))

    def getter(cls: object, name: str = "__dict__"):
        """``cls``'s own C descriptor for ``name`` (a slot, or the instance dict); None if it has none.
        A metaclass cannot redirect this: the MRO and namespaces are read through ``type``'s own."""
        if not _sub(_type(cls), type):
            return None
        for base in _mro(cls):
            found = fresh(_cls_dict(base)).get(name)
            if _type(found) is slot_types[0] or _type(found) is slot_types[1]:
                return found.__get__  # type: ignore[union-attr]
        return None

    def field(cls: object, name: str):
        """A reader of ``obj.<name>``: the slot's descriptor, else a lookup in the instance dict."""
        if cls is None:
            return None
        found = getter(cls, name)
        if found is not None:
            return found
        read = getter(cls)
        if read is None:
            return None

        def lookup(obj: object) -> object:
            return fresh(read(obj)).get(name)

        return lookup

    def attrs(obj: object, read) -> dict:
        if read is None:
            return {}
        try:
            return fresh(read(obj))
        except Exception:
            return {}

    def code_like(value: object) -> bool:
        return _callable(value) or _sub(_type(value), descriptors)

    # The runner's fingerprint at load: every function, class and descriptor of the watched modules.
    modules = fresh(sys_modules)
    base_modules: list[tuple[str, object, dict]] = []
    base_classes: list[tuple[str, object, dict]] = []
    for name in watched:
        module = modules.get(name)
        if module is None or not _sub(_type(module), module_t):
            continue
        entries = {}
        for attr, value in fresh(_mod_dict(module)).items():
            dunder = attr.startswith("__") and attr.endswith("__")
            if (dunder and attr not in ("__import__", "__build_class__", "__getattr__")) or attr == "_":
                continue
            if code_like(value):
                entries[attr] = value
        base_modules.append((name, module, entries))
        for attr, value in entries.items():
            if not _sub(_type(value), type):
                continue
            owner = fresh(_cls_dict(value)).get("__module__")
            if _type(owner) is _str and owner.split(".")[0] in CLASS_PACKAGES:
                members = {m: x for m, x in fresh(_cls_dict(value)).items() if code_like(x)}
                base_classes.append((name + "." + attr, value, members))
    keep.append((base_modules, base_classes))

    builtin_t = _type(_len)

    def library_value(value: object) -> bool:
        """Whether ``value`` is a function, method or descriptor of library code (or a built-in)."""
        kind = _type(value)
        if kind is func_t:
            return _id(value.__code__) in trusted  # type: ignore[attr-defined]
        if kind is method_t or kind is classmethod or kind is staticmethod:
            return library_value(value.__func__)  # type: ignore[attr-defined]
        if kind is property:
            for part in (value.fget, value.fset, value.fdel):  # type: ignore[attr-defined]
                if part is not None and not library_value(part):
                    return False
            return True
        return kind is builtin_t

    def rebase() -> None:
        """pytest's own plugins add and replace members while it configures (``legacypath``): what
        library code put there by now becomes the baseline; anything else stays a difference."""
        for _name, module, entries in base_modules:
            current = fresh(_mod_dict(module))
            for attr, value in entries.items():
                if current.get(attr) is not value and library_value(current.get(attr)):
                    entries[attr] = current[attr]
        for _label, cls, members in base_classes:
            for member, value in fresh(_cls_dict(cls)).items():
                if members.get(member) is not value and code_like(value) and library_value(value):
                    members[member] = value

    def patched() -> list[str]:
        found: list[str] = []
        now = fresh(sys_modules)
        for name, module, entries in base_modules:
            if now.get(name) is not module:
                found.append(name + " (module replaced)")
            current = fresh(_mod_dict(module))
            for attr, value in entries.items():
                if current.get(attr) is not value:
                    found.append(name + "." + attr)
        for label, cls, members in base_classes:
            current = fresh(_cls_dict(cls))
            for member, value in members.items():
                if current.get(member) is not value:
                    found.append(label + "." + member)
            for member, value in current.items():
                if member not in members and code_like(value):
                    found.append(label + "." + member + " (added)")
        return _sorted(_set(found))

    # Where code may come from: the interpreter's library folders, and the task's own test files.
    trusted = _dict(trusted)
    conftests: dict[int, object] = {}

    tests: dict[int, tuple[object, str]] = {}  # test files' code: id -> (code, file)

    def absorb(code: object, into: dict | None = None, origin: str = "") -> None:
        table = trusted if into is None else into
        stack = [code]
        while stack:
            item = stack.pop()
            if _id(item) in table:
                continue
            table[_id(item)] = item if into is None else (item, origin)
            for const in item.co_consts:  # type: ignore[attr-defined]
                if _type(const) is code_t:
                    stack.append(const)

    def test_side(path: str) -> bool:
        """A workspace file that is test code by the project's path rules (the task's, never the agent's)."""
        parts = path[_len(workspace) + 1 :].split("/")
        name = parts[-1]
        if name == "conftest.py" or name in ("test.py", "tests.py") or name.endswith("_test.py"):
            return True
        if name.startswith("test_") and name.endswith(".py"):
            return True
        for folder in parts[:-1]:
            if folder in test_dirs:
                return True
        return False

    def from_trusted_stack(frame: object) -> bool:
        """Nothing on the stack but library code, test code and the reporter's own."""
        while frame is not None:
            if _id(frame.f_code) not in trusted and _id(frame.f_code) not in tests:  # type: ignore[attr-defined]
                return False
            frame = frame.f_back  # type: ignore[attr-defined]
        return True

    def plain(path: str) -> bool:
        return path.startswith("/") and "/../" not in path and "/./" not in path and "//" not in path

    def under(path: str, root: str) -> bool:
        return path.startswith(root + "/")

    r = refs
    call_frames = r.get("call_frames")
    loader_exec = r.get("loader_exec")
    rewrite_exec = r.get("rewrite_exec")
    run_code = r.get("run_code")
    frozen_exec = r.get("frozen_exec")
    loader_types = r.get("loader_types", ())
    read_loader, read_spec = getter(r.get("loader_class")), getter(r.get("spec_class"))
    spec_t, rewrite_t = r.get("spec_class"), r.get("rewrite_class")

    def track(caller: object, code: object) -> None:
        """Trust code the import system is about to run when it is library code or the task's test code
        (kept apart: a passing test must run its test file's own function), and code library code
        generates (a decorator's wrapper), when nothing but trusted code drives it."""
        if _type(code) is not code_t or _type(caller) is not frame_t:
            return
        origin, module = None, None
        runs = caller.f_code  # type: ignore[attr-defined]
        generated = code.co_filename  # type: ignore[attr-defined]
        if _type(generated) is _str and generated.startswith("<") and _id(runs) in trusted:
            if runs is not run_code and from_trusted_stack(caller):
                absorb(code)
            return
        if runs is frozen_exec:
            origin = "<frozen>"
        elif runs is call_frames:
            up = caller.f_back  # type: ignore[attr-defined]
            if up is None or up.f_code is not loader_exec:
                return
            scope = scope_of(up)
            if scope.get("code") is not code or not one_of(_type(scope.get("self")), loader_types):
                return
            origin, module = attrs(scope.get("self"), read_loader).get("path"), scope.get("module")
        elif runs is rewrite_exec or runs is run_code:
            scope = scope_of(caller)
            if scope.get("co" if runs is rewrite_exec else "code") is not code:
                return
            if runs is rewrite_exec:
                if _type(scope.get("self")) is not rewrite_t:
                    return
                module = scope.get("module")
                spec = attrs(module, _mod_dict).get("__spec__") if _type(module) is module_t else None
            else:
                spec = scope.get("mod_spec")
            if _type(spec) is not spec_t:
                return
            found = attrs(spec, read_spec)
            if runs is run_code and not one_of(_type(found.get("loader")), loader_types):
                return
            origin = found.get("origin")
        else:
            return
        if _type(origin) is not _str:
            return
        if not from_trusted_stack(caller):
            return
        if origin == "<frozen>":
            absorb(code)
            return
        if not plain(origin):
            return
        for root in roots:
            if under(origin, root):
                absorb(code)
                return
        if under(origin, workspace) and test_side(origin):
            try:
                if _stat(origin).st_ctime_ns > boot_ns:
                    return  # written while the tests ran: not the task's
            except (OSError, ValueError):
                return
            absorb(code, tests, origin)
            absorb(code)  # test code may implement hooks too (conftest.py, a tests/ plugin module)
            if origin.endswith("/conftest.py") and _type(module) is module_t:
                conftests[_id(module)] = module

    # pytest's machinery, read through its own descriptors.
    pluggy_codes = r.get("pluggy_codes", {})
    report_t, subreport_t, collect_t = r.get("TestReport"), r.get("SubtestReport"), r.get("CollectReport")
    read_report = getter(report_t)
    relay_t, caller_t, subset_t, impl_t = (
        r.get("HookRelay"),
        r.get("HookCaller"),
        r.get("Subset"),
        r.get("HookImpl"),
    )
    read_relay = getter(relay_t)
    hc_impls, hc_exec = field(caller_t, "_hookimpls"), field(caller_t, "_hookexec")
    sub_orig, sub_removed = field(subset_t, "_orig"), field(subset_t, "_remove_plugins")
    impl_function, impl_name = field(impl_t, "function"), field(impl_t, "plugin_name")
    pm_t, config_t, session_t = r.get("PluginManager"), r.get("Config"), r.get("Session")
    read_pm, read_config, read_session = getter(pm_t), getter(config_t), getter(session_t)
    aware_t, fs_t = r.get("PathAware"), r.get("FSHookProxy")
    read_aware, read_fs = getter(aware_t), getter(fs_t)
    item_types = r.get("item_types", ())
    item_readers = [(t, getter(t)) for t in item_types]

    def item_reader(kind: object) -> object:
        """The instance-dict reader of a pytest test item of exactly this class, else None."""
        for known, read in item_readers:
            if kind is known:
                return read
        return None

    methods = r.get("methods", {})
    exit_t = r.get("ExitCode")

    def one_of(kind: object, kinds: tuple) -> bool:
        """``kind in kinds`` by identity (``in`` would call a metaclass's ``__eq__``)."""
        for known in kinds:
            if kind is known:
                return True
        return False

    def slot(read, obj: object) -> object:
        try:
            return read(obj) if read is not None else None
        except Exception:
            return None

    def from_library(function: object) -> bool:
        if _type(function) is method_t:
            function = function.__func__  # type: ignore[attr-defined]
        return _type(function) is func_t and _id(function.__code__) in trusted  # type: ignore[attr-defined]

    def no_overrides(obj: object, read, kind: object) -> str:
        own = methods.get(kind, _frozenset())
        for name in attrs(obj, read):
            if name in own:
                return _qualname(kind) + "." + name + " overridden on an instance"
        return ""

    def pytest_machinery() -> str:
        """Why pytest's hook machinery is not what pytest and the task's own plugins set up, or ""."""
        pm, relay, hook = state["pm"], state["relay"], state["hook"]
        if pm is None:
            return "pytest was not configured through its own machinery"
        found = attrs(pm, read_pm)
        if found.get("hook") is not relay:
            return "the plugin manager's hook relay was replaced"
        if found.get("_inner_hookexec") is not r.get("multicall"):
            return "pluggy's hook execution was replaced"
        why = no_overrides(pm, read_pm, pm_t)
        if why:
            return why
        plugins = found.get("_conftest_plugins")
        if plugins is not None:
            if _type(plugins) is not _set:
                return "the conftest plugin set was replaced"
            for plugin in plugins:
                if _id(plugin) not in conftests:
                    return "a plugin posing as a conftest: " + _qualname(_type(plugin))
        callers = attrs(relay, read_relay)
        for name, hook_caller in callers.items():
            if _type(hook_caller) is not caller_t:
                return "hook " + name + " was replaced"
            execute = slot(hc_exec, hook_caller)
            if (
                _type(execute) is not method_t
                or execute.__func__ is not r.get("pm_hookexec")  # type: ignore[attr-defined]
                or execute.__self__ is not pm  # type: ignore[attr-defined]
            ):
                return "hook " + name + " runs through a replaced executor"
            if name not in CRITICAL_HOOKS:
                continue
            impls = slot(hc_impls, hook_caller)
            if _type(impls) is not _list:
                return "hook " + name + " has replaced implementations"
            for impl in impls:
                if _type(impl) is not impl_t or not from_library(slot(impl_function, impl)):
                    who = slot(impl_name, impl)
                    return (
                        "an untrusted "
                        + name
                        + " implementation ("
                        + (who if _type(who) is _str else "?")
                        + ")"
                    )
        if hook is not relay:
            found = attrs(hook, read_aware)
            if found.get("_hook_relay") is not relay:
                return "pytest's hook proxy was replaced"
            for name, value in found.items():
                if name != "_hook_relay" and not cached_ok(value, callers.get(name)):
                    return "pytest's hook proxy was altered (" + name + ")"
        return ""

    def cached_ok(value: object, hook_caller: object) -> bool:
        """A hook proxy's cached entry: the relay's own caller, or pytest's path-argument wrapper of it."""
        return value is hook_caller or wrapped(value) is hook_caller

    def wrapped(value: object) -> object:
        """What pytest's path-argument wrapper (library code, a closure over ``hook``) calls, else None."""
        if _type(value) is not func_t or _id(value.__code__) not in trusted:  # type: ignore[attr-defined]
            return None
        names, cells = value.__code__.co_freevars, value.__closure__  # type: ignore[attr-defined]
        if "hook" not in names or _type(cells) is not _tuple:
            return None
        return cells[names.index("hook")].cell_contents

    def subset_ok(value: object, callers: dict) -> bool:
        if _type(value) is caller_t:
            for known in callers.values():
                if known is value:
                    return True
            return False
        if _type(value) is not subset_t:
            return False
        orig = slot(sub_orig, value)
        if _type(orig) is not caller_t or slot(hc_exec, value) is not slot(hc_exec, orig):
            return False
        removed = slot(sub_removed, value)
        if not one_of(_type(removed), (_set, _frozenset)):
            return False
        for plugin in removed:  # type: ignore[attr-defined]
            if _id(plugin) not in conftests:
                return False
        return subset_ok(orig, callers)

    def proxy_ok(ihook: object, runtest_hook: object) -> str:
        relay, hook = state["relay"], state["hook"]
        callers = attrs(relay, read_relay)
        if runtest_hook is not None and not subset_ok(runtest_hook, callers):
            return "the test phase ran through an altered hook"
        if ihook is hook or ihook is relay:
            return ""
        inner = ihook
        if aware_t is not None and _type(ihook) is aware_t:
            found = attrs(ihook, read_aware)
            inner = found.get("_hook_relay")
            for name, value in found.items():
                if name != "_hook_relay" and not subset_ok(value, callers):
                    if not subset_ok(wrapped(value), callers):
                        return "the item's hook proxy was altered"
        if inner is relay:
            return ""
        if _type(inner) is not fs_t:
            return "the item's hook proxy was replaced"
        found = attrs(inner, read_fs)
        if found.get("pm") is not state["pm"]:
            return "the item's hook proxy has another plugin manager"
        removed = found.get("remove_mods")
        if not one_of(_type(removed), (_set, _frozenset)):
            return "the item's hook proxy was altered"
        for plugin in removed:  # type: ignore[attr-defined]
            if _id(plugin) not in conftests:
                return "the item's hook proxy hides a plugin that is not a conftest"
        for name, value in found.items():
            if name not in ("pm", "remove_mods") and not subset_ok(value, callers):
                return "the item's hook proxy was altered"
        return ""

    def item_ok(item: object) -> str:
        kind = _type(item)
        read = item_reader(kind)
        if read is None:
            return ""  # made by a trusted collector (doctests, a conftest's items)
        why = no_overrides(item, read, kind)
        if why:
            return why
        session = attrs(item, read).get("session")
        if _type(session) is session_t:
            why = no_overrides(session, read_session, session_t)
        return why

    read_function = getter(func_t)

    def own_test(function: object, name: str, suffix: str | None, qualname: str) -> str:
        """Nothing (``""``) when ``function`` is the test's own code, loaded from its test file (its name is
        ``name``, its qualified name ``qualname`` or, for a method, ends with ``.name``, its file's path ends
        with ``suffix`` when given), or is library or test code that reaches it through its closure (a
        decorator's wrapper) or as Hypothesis's inner test; else why not. Attributes such as
        ``__wrapped__`` are not followed: any function can be given one."""
        pending, seen, depth = [(function, 0)], _set(), 0
        why = "the test function is not its test file's code"
        while pending:
            function, depth = pending.pop()
            while _type(function) is method_t:
                function = function.__func__  # type: ignore[attr-defined]
            if _type(function) is not func_t or _id(function) in seen or depth > 6:
                continue
            seen.add(_id(function))
            code = function.__code__  # type: ignore[attr-defined]
            found = tests.get(_id(code))
            if found is not None:
                inner = _getattr(code, "co_qualname", qualname)
                if code.co_name != name or not (
                    inner == qualname or suffix is None and inner.endswith("." + name)
                ):
                    why = "the test function is another one of the test files"
                elif suffix is not None and not found[1].endswith("/" + suffix):
                    why = "the test function is from another file"
                else:
                    return ""
            if _id(code) not in trusted:
                continue
            for cell in function.__closure__ or ():  # type: ignore[attr-defined]
                try:
                    pending.append((cell.cell_contents, depth + 1))
                except ValueError:
                    pass
            names = code.co_freevars
            if code.co_name == "wrapped_test" and code.co_filename.endswith("/hypothesis/core.py"):
                # what Hypothesis runs: ``wrapped_test.hypothesis.inner_test``, through its own free variable
                if "wrapped_test" in names and _type(function.__closure__) is _tuple:  # type: ignore[attr-defined]
                    outer = function.__closure__[names.index("wrapped_test")]  # type: ignore[attr-defined]
                    try:
                        handle = attrs(outer.cell_contents, read_function).get("hypothesis")
                    except ValueError:
                        handle = None
                    inner_test = attrs(handle, getter(_type(handle))).get("inner_test")
                    pending.append((inner_test, depth + 1))
        return why

    def identity(item: object, nodeid: str) -> str:
        """Nothing (``""``) when a pytest item is the test its node id names, running its file's function."""
        read = item_reader(_type(item))
        if read is None:
            return "not a test function of a Python test file"
        found = attrs(item, read)
        name, parts = found.get("originalname"), nodeid.split("::")
        if _type(name) is not _str or _len(parts) < 2:
            return "the item has no name"
        for key in ("_instance", "_testcase"):  # a unittest case under pytest: its own method, not another
            case = found.get(key)
            if case_t is not None and _sub(_type(case), case_t):
                own = attrs(case, read_case)
                if name in own or own.get("_testMethodName", name) != name:
                    return "the test case's method was replaced"
        if _len(parts) == 2:
            return own_test(found.get("_obj"), name, parts[0], name)
        return own_test(found.get("_obj"), name, None, ".".join(parts[1:-1]) + "." + name)

    def chain(caller: object, code: object) -> object:
        """The first frame below ``caller`` that is not pluggy's, if it runs ``code``; else None."""
        frame = caller.f_back  # type: ignore[attr-defined]
        while frame is not None and _id(frame.f_code) in pluggy_codes:
            frame = frame.f_back
        if frame is None or frame.f_code is not code:
            return None
        return frame

    def scope_of(frame: object) -> dict:
        found = frame.f_locals  # type: ignore[attr-defined]
        if _type(found) is _dict:
            return fresh(found)
        if _type(found) is locals_t:
            out = {}
            for name in (
                "self",
                "report",
                "item",
                "ihook",
                "runtest_hook",
                "session",
                "result",
                "test",
                "code",
            ):
                try:
                    out[name] = found[name]
                except Exception:
                    pass
            for name in ("co", "module", "mod_spec"):
                try:
                    out[name] = found[name]
                except Exception:
                    pass
            return out
        return {}

    def record(test: str, outcome: str, when: str | None) -> None:
        body = {"kind": "outcome", "test": test, "outcome": outcome}
        if when is not None:
            body["when"] = when
        emit(body)

    def on_report(caller: object, report: object) -> None:
        kind = _type(report)
        if kind is not report_t and (subreport_t is None or kind is not subreport_t):
            return
        found = attrs(report, read_report)
        nodeid, when, outcome = found.get("nodeid"), found.get("when"), found.get("outcome")
        if _type(nodeid) is not _str or _type(when) is not _str or _type(outcome) is not _str:
            return
        if "wasxfail" in found:
            outcome = "xfailed" if outcome == "skipped" else "xpassed"
        if outcome != "passed" and outcome != "skipped":
            record(nodeid, outcome, when)  # a failure counts from wherever it comes
            return
        frame = chain(caller, r.get("call_and_report")) if kind is report_t else None
        scope = scope_of(frame) if frame is not None else {}
        why = "not reported by pytest's runner"
        if frame is not None and scope.get("report") is report:
            why = identity(scope.get("item"), nodeid) if outcome == "passed" and when == "call" else ""
        if why:
            if _len(unproven) < 20:
                unproven.append(nodeid + " (" + when + "): " + why)
            return
        if outcome == "passed" and when == "call":
            why = pytest_machinery() or proxy_ok(scope.get("ihook"), scope.get("runtest_hook"))
            why = why or item_ok(scope.get("item"))
            if why:
                if why not in tampered:
                    tampered.append(why)
                return
        record(nodeid, outcome, when)

    read_collect = getter(collect_t)

    def on_collect(report: object) -> None:
        if _type(report) is not collect_t:
            return
        found = attrs(report, read_collect)
        outcome = found.get("outcome")
        if _type(outcome) is _str and outcome == "failed":
            nodeid = found.get("nodeid")
            record(
                nodeid if _type(nodeid) is _str and nodeid else "<collection>", "collection_error", "collect"
            )

    def on_configure(caller: object, config: object) -> None:
        frame = chain(caller, r.get("do_configure"))
        if frame is None or scope_of(frame).get("self") is not config or state["pm"] is not None:
            return
        if _type(config) is not config_t:
            return
        found = attrs(config, read_config)
        pm = found.get("pluginmanager")
        if _type(pm) is not pm_t:
            return
        relay = attrs(pm, read_pm).get("hook")
        if _type(relay) is not relay_t:
            return
        state["config"], state["pm"], state["relay"], state["hook"] = config, pm, relay, found.get("hook")
        rebase()

    def on_session(caller: object, session: object, status: object) -> None:
        frame = chain(caller, r.get("wrap_session"))
        if frame is None or scope_of(frame).get("session") is not session:
            return
        if _type(status) is _int or exit_t is not None and _type(status) is exit_t:
            state["exit"] = _int_add(0, status)

    def finish(exitstatus: object) -> None:
        body = {"kind": "final", "finished": True, "patched": patched(), "count": state["outcomes"]}
        if runner == "pytest":
            body["exitstatus"] = exitstatus
            if state["pm"] is not None:
                why = pytest_machinery()
                if why and why not in tampered:
                    tampered.append(why)
        body["tampered"] = _list(tampered)
        body["unproven"] = _list(unproven)
        state["done"] = True
        emit(body)

    def on_unconfigure(caller: object, config: object) -> None:
        frame = chain(caller, r.get("ensure_unconfigure"))
        if frame is None or scope_of(frame).get("self") is not config or config is not state.get("config"):
            return
        if state["exit"] is None:
            return
        finish(state["exit"])

    # unittest's result methods, read the same way.
    case_t = r.get("TestCase")
    read_case = getter(case_t)
    case_run, run_tests, result_codes = r.get("case_run"), r.get("run_tests"), r.get("result_codes", {})

    def test_id(test: object) -> str:
        kind = _type(test)
        if case_t is None or not _sub(kind, case_t):
            return "<error>"
        owner = fresh(_cls_dict(kind)).get("__module__")
        method = attrs(test, read_case).get("_testMethodName")
        if _type(owner) is not _str or _type(method) is not _str:
            return "<error>"
        return owner + "." + _qualname(kind) + "." + method

    def on_unittest(caller: object, op: str, result: object, test: object) -> None:
        if op != "passed":
            record(test_id(test), op, None)
            return
        frame = caller.f_back  # type: ignore[attr-defined]
        while frame is not None and _id(frame.f_code) in result_codes:  # TextTestResult.addSuccess
            frame = frame.f_back
        scope = scope_of(frame) if frame is not None and frame.f_code is case_run else {}
        why = "not reported by unittest's runner"
        if scope.get("self") is test and scope.get("result") is result:
            why = case_identity(test)
        if why:
            if _len(unproven) < 20:
                unproven.append(test_id(test) + ": " + why)
            return
        record(test_id(test), "passed", None)

    def case_identity(test: object) -> str:
        """Nothing (``""``) when a test case runs its own test method, its test file's code."""
        own = attrs(test, read_case)
        method = own.get("_testMethodName")
        if _type(method) is not _str or method in own:
            return "the test case's method was replaced"
        for base in _mro(_type(test)):
            found = fresh(_cls_dict(base))
            if method in found:
                module = found.get("__module__")
                if _type(module) is not _str:
                    return "the test class has no module"
                suffix = module.replace(".", "/") + ".py"
                return own_test(found[method], method, suffix, _qualname(base) + "." + method)
        return "the test case has no such method"

    def on_unittest_end(caller: object) -> None:
        frame = caller.f_back  # type: ignore[attr-defined]
        if frame is not None and frame.f_code is run_tests:
            finish(None)

    codes = {_id(code): op for op, code in reporter.items()}
    keep.append(reporter)

    def kernel(event: str, args: tuple) -> None:
        if event != EVENT and event != "exec" and event != "object.__setattr__":
            return
        if event == "object.__setattr__" and (
            _len(args) < 3 or _type(args[1]) is not _str or args[1] != "__code__"
        ):
            return
        enabled = _gc_enabled()
        if enabled:
            _gc_off()  # no finalizer of the process's objects runs while the kernel works
        try:
            caller = _getframe(1)
            if event == "exec":
                if args:
                    track(caller, args[0])
                return
            if event == "object.__setattr__":  # a decorator giving its wrapper new code (Hypothesis)
                if _type(args[2]) is code_t and _id(caller.f_code) in trusted and from_trusted_stack(caller):
                    absorb(args[2])
                return
            if state["done"] or not args or _type(args[0]) is not _str:
                return
            op = codes.get(_id(caller.f_code))
            if op is None or op != args[0]:
                return  # only the reporter's own code, each function for its own op
            if op == "report" and _len(args) == 2:
                on_report(caller, args[1])
            elif op == "collect" and _len(args) == 2:
                on_collect(args[1])
            elif op == "configure" and _len(args) == 2:
                on_configure(caller, args[1])
            elif op == "session" and _len(args) == 3:
                on_session(caller, args[1], args[2])
            elif op == "final" and _len(args) == 2:
                on_unconfigure(caller, args[1])
            elif op == "end":
                on_unittest_end(caller)
            elif _len(args) == 3:
                on_unittest(caller, op, args[1], args[2])
        except BaseException as error:  # never raise: a traceback would carry this frame
            try:
                _clear_tb(error, None)
            except BaseException:
                pass
        finally:
            if enabled:
                _gc_on()

    emit({"kind": "start", "pid": os.getpid(), "runner": runner})
    return kernel


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


def _take_channel(here: str) -> tuple[bytearray, int] | None:
    """The key (read into a buffer the kernel zeroes, then deleted) and the report descriptor (its number
    taken out of the environment); None where either is missing: a child process, or no verifier."""
    fd_text = os.environ.pop(FD_VARIABLE, "")
    key_path = os.path.join(here, KEY_FILE)
    try:
        handle = os.open(key_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            buffer = bytearray(64)
            size = os.readv(handle, [buffer])
        finally:
            os.close(handle)
        os.unlink(key_path)
        fd = int(fd_text)
        os.fstat(fd)
    except (OSError, ValueError):
        return None
    if not size:
        return None
    key = bytearray(size)
    for i in range(size):
        key[i], buffer[i] = buffer[i], 0
    return key, fd


def _codes_of(objects, into: dict[int, object], seen: set[int]) -> None:
    """Every code object of ``objects`` (functions, methods, classes' members, properties, wrapped
    functions, nested code), into ``{id: code}``."""
    import types

    stack = list(objects)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj)
        if kind is types.CodeType:
            if id(obj) not in into:
                into[id(obj)] = obj
                stack.extend(c for c in obj.co_consts if type(c) is types.CodeType)
        elif kind is types.FunctionType:
            stack.append(obj.__code__)
            wrapped = obj.__dict__.get("__wrapped__")
            if wrapped is not None:
                stack.append(wrapped)
        elif kind is types.MethodType or issubclass(kind, staticmethod | classmethod):
            stack.append(obj.__func__)
        elif issubclass(kind, property):
            stack.extend(f for f in (obj.fget, obj.fset, obj.fdel) if f is not None)
        elif issubclass(kind, type):
            stack.extend(type.__dict__["__dict__"].__get__(obj).values())


def _library_codes(workspace: str) -> dict[int, object]:
    """The code of every module loaded now (before any agent code) from outside the workspace, and of
    every frame on the stack."""
    import types

    codes: dict[int, object] = {}
    seen: set[int] = set()
    for module in list(sys.modules.values()):
        if not isinstance(module, types.ModuleType):
            continue
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and os.path.realpath(where).startswith(workspace + os.sep):
            continue
        _codes_of(list(vars(module).values()), codes, seen)
    frame = sys._getframe()
    while frame is not None:
        _codes_of([frame.f_code], codes, seen)
        frame = frame.f_back
    return codes


def _library_roots(workspace: str) -> tuple[str, ...]:
    """The interpreter's library folders (and pytest's and pluggy's), outside the workspace."""
    import sysconfig

    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    for name in ("pytest", "_pytest", "pluggy"):
        where = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(where, str):
            paths.add(os.path.dirname(os.path.dirname(where)))
    roots = set()
    for path in paths:
        if path and os.path.isdir(path):
            for form in (os.path.abspath(path), os.path.realpath(path)):
                if not (
                    form == workspace or form.startswith(workspace + os.sep) or workspace.startswith(form)
                ):
                    roots.add(form)
    return tuple(sorted(roots))


def _methods(cls) -> frozenset[str]:
    """Names of the functions and descriptors ``cls`` and its bases define."""
    names = set()
    for base in cls.__mro__:
        for name, value in type.__dict__["__dict__"].__get__(base).items():
            if callable(value) or isinstance(value, property | classmethod | staticmethod):
                names.add(name)
    return frozenset(names - {"__init_subclass__", "__subclasshook__", "__class_getitem__"})


def _import_refs() -> dict[str, object]:
    """The import system's code objects and classes the kernel recognises when it trusts new code."""
    import importlib._bootstrap as bootstrap
    import importlib._bootstrap_external as external
    import runpy

    refs: dict[str, object] = {
        "call_frames": bootstrap._call_with_frames_removed.__code__,
        "loader_exec": external._LoaderBasics.exec_module.__code__,
        "frozen_exec": bootstrap.FrozenImporter.exec_module.__code__,
        "run_code": runpy._run_code.__code__,
        "loader_types": (external.SourceFileLoader, external.SourcelessFileLoader),
        "loader_class": external.SourceFileLoader,
        "spec_class": bootstrap.ModuleSpec,
    }
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    if rewrite is not None:
        refs["rewrite_exec"] = rewrite.AssertionRewritingHook.exec_module.__code__
        refs["rewrite_class"] = rewrite.AssertionRewritingHook
    return refs


def _pytest_refs() -> dict[str, object]:
    """pytest's and pluggy's classes and code objects the kernel checks a report's way against."""
    import unittest.case

    import _pytest.config
    import _pytest.main
    import _pytest.python
    import _pytest.reports
    import _pytest.runner
    import pluggy._callers
    import pluggy._hooks
    import pluggy._manager

    pluggy_codes: dict[int, object] = {}
    seen: set[int] = set()
    for name, module in list(sys.modules.items()):
        if name == "pluggy" or name.startswith("pluggy."):
            _codes_of(list(vars(module).values()), pluggy_codes, seen)
    compat = sys.modules.get("_pytest.config.compat")
    subtests = sys.modules.get("_pytest.subtests")
    unit = sys.modules.get("_pytest.unittest")
    item_types = (_pytest.python.Function,) + ((unit.TestCaseFunction,) if unit is not None else ())
    config, pm = _pytest.config.Config, _pytest.config.PytestPluginManager
    return {
        "pluggy_codes": pluggy_codes,
        "TestCase": unittest.case.TestCase,
        "TestReport": _pytest.reports.TestReport,
        "CollectReport": _pytest.reports.CollectReport,
        "SubtestReport": getattr(subtests, "SubtestReport", None),
        "call_and_report": _pytest.runner.call_and_report.__code__,
        "do_configure": config._do_configure.__code__,
        "ensure_unconfigure": config._ensure_unconfigure.__code__,
        "wrap_session": _pytest.main.wrap_session.__code__,
        "HookRelay": pluggy._hooks.HookRelay,
        "HookCaller": pluggy._hooks.HookCaller,
        "Subset": pluggy._hooks._SubsetHookCaller,
        "HookImpl": pluggy._hooks.HookImpl,
        "multicall": pluggy._callers._multicall,
        "pm_hookexec": pluggy._manager.PluginManager._hookexec,
        "PluginManager": pm,
        "Config": config,
        "Session": _pytest.main.Session,
        "PathAware": getattr(compat, "PathAwareHookProxy", None),
        "FSHookProxy": _pytest.main.FSHookProxy,
        "ExitCode": _pytest.main.ExitCode,
        "item_types": item_types,
        "methods": {cls: _methods(cls) for cls in (pm, _pytest.main.Session, *item_types)},
    }


def _not_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: other processes of the same user can no longer read this one's
    memory (``/proc/<pid>/mem``, ptrace). Best effort; ctypes leaves ``sys.modules`` again."""
    before = set(sys.modules)
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass
    finally:
        for name in set(sys.modules) - before:
            sys.modules.pop(name, None)


def pytest_configure(config) -> None:
    sys.audit(EVENT, "configure", config)
    plugins = getattr(config.option, "plugins", None)
    if isinstance(plugins, list) and __name__ in plugins:
        plugins.remove(__name__)
    sys.modules.pop(__name__, None)  # registered with pytest now; nothing finds it by name


def pytest_runtest_logreport(report) -> None:
    sys.audit(EVENT, "report", report)


def pytest_collectreport(report) -> None:
    sys.audit(EVENT, "collect", report)


def pytest_sessionfinish(session, exitstatus) -> None:
    sys.audit(EVENT, "session", session, exitstatus)


def pytest_unconfigure(config) -> None:
    """The final record: the kernel writes it only here, after the session's result is known."""
    sys.audit(EVENT, "final", config)


def _unittest_wrappers() -> dict[str, object]:
    """Wrap ``TestResult.add*`` (each outcome goes to the kernel as it is reported) and
    ``TextTestRunner.run`` (the end of the top-level run); return each wrapper's op and code object."""
    import unittest.result
    import unittest.runner

    result, runner = unittest.result.TestResult, unittest.runner.TextTestRunner
    add_success, add_failure, add_error = result.addSuccess, result.addFailure, result.addError
    add_skip, add_expected, add_unexpected = (
        result.addSkip,
        result.addExpectedFailure,
        result.addUnexpectedSuccess,
    )
    add_subtest, run = result.addSubTest, runner.run
    audit, modules = sys.audit, sys.modules

    def addSuccess(self, test):
        audit(EVENT, "passed", self, test)
        return add_success(self, test)

    def addFailure(self, test, err):
        audit(EVENT, "failed", self, test)
        return add_failure(self, test, err)

    def addError(self, test, err):
        audit(EVENT, "error", self, test)
        return add_error(self, test, err)

    def addSkip(self, test, reason):
        audit(EVENT, "skipped", self, test)
        return add_skip(self, test, reason)

    def addExpectedFailure(self, test, err):
        audit(EVENT, "xfailed", self, test)
        return add_expected(self, test, err)

    def addUnexpectedSuccess(self, test):
        audit(EVENT, "xpassed", self, test)
        return add_unexpected(self, test)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            audit(EVENT, "subtest_failed", self, test)
        return add_subtest(self, test, subtest, err)

    def run_and_end(self, test):
        modules.pop("sitecustomize", None)  # nothing finds this module by name once the tests run
        outcome = run(self, test)
        audit(EVENT, "end")
        return outcome

    wrappers = {
        "passed": (result, "addSuccess", addSuccess),
        "failed": (result, "addFailure", addFailure),
        "error": (result, "addError", addError),
        "skipped": (result, "addSkip", addSkip),
        "xfailed": (result, "addExpectedFailure", addExpectedFailure),
        "xpassed": (result, "addUnexpectedSuccess", addUnexpectedSuccess),
        "subtest_failed": (result, "addSubTest", addSubTest),
        "end": (runner, "run", run_and_end),
    }
    for owner, name, function in wrappers.values():
        function.__qualname__ = f"{owner.__qualname__}.{name}"
        setattr(owner, name, function)
    return {op: function.__code__ for op, (_, _, function) in wrappers.items()}


def _boot() -> None:
    """Take the channel, hide it, start the kernel and the guard; inert without a channel."""
    here = os.path.dirname(os.path.realpath(__file__))
    unittest_run = __name__ == "sitecustomize"
    if unittest_run:
        if not any("unittest" in arg for arg in getattr(sys, "orig_argv", sys.argv)):
            return  # another Python of the same command: leave the key for the test runner
    else:
        _scrub_addopts(__name__)
    channel = _take_channel(here)
    if channel is None:
        return
    try:
        os.unlink(os.path.realpath(__file__))
    except OSError:
        pass
    import time

    boot_ns = time.time_ns()
    workspace = os.path.realpath(os.getcwd())
    ours: dict[int, object] = {}
    _codes_of([v for v in globals().values() if callable(v)], ours, set())
    guarded: dict[int, object] = {}  # the kernel's code: its frames are never handed out
    _codes_of([make_kernel], guarded, set())
    refs = _import_refs()
    if unittest_run:
        import unittest.case
        import unittest.runner

        reporter = _unittest_wrappers()
        result_codes: dict[int, object] = {}
        _codes_of([unittest.runner.TextTestResult], result_codes, set())
        refs |= {
            "result_codes": result_codes,
            "TestCase": unittest.case.TestCase,
            "case_run": unittest.case.TestCase.run.__code__,
            "run_tests": sys.modules["unittest.main"].TestProgram.runTests.__code__,
        }
        _codes_of(list(reporter.values()), ours, set())
    else:
        reporter = {
            "configure": pytest_configure.__code__,
            "report": pytest_runtest_logreport.__code__,
            "collect": pytest_collectreport.__code__,
            "session": pytest_sessionfinish.__code__,
            "final": pytest_unconfigure.__code__,
        }
        refs |= _pytest_refs()
    library = _library_codes(workspace)
    roots = _library_roots(workspace)
    _not_dumpable()
    kernel = make_kernel(
        channel[0],
        channel[1],
        runner="unittest" if unittest_run else "pytest",
        workspace=workspace,
        roots=roots,
        boot_ns=boot_ns,
        trusted={**library, **ours},
        reporter=reporter,
        refs=refs,
    )
    sys.addaudithook(kernel)
    sys.addaudithook(
        make_guard(workspace, here, channel[1], frozenset(guarded), frozenset({**library, **ours}))
    )


_boot()
