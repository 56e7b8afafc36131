"""The judge's side: the solution's modules as proxies, backed by a separate, confined process.

``install(judge_root, solution_root, tmp, deadline)`` puts ``SolutionFinder`` first on ``sys.meta_path``.
A module the tests import that exists in the solution's tree (and not among the judge's own files, the
standard library or the installed packages, in ``sys.path`` order) becomes a ``ProxyModule``; its
attributes, calls and operators are requests to ``SolutionProcess``, a child Python that imports the real
module. Values come back by value (``wire``); other objects as ``Handle``s. The judge decides equality,
hashing, ordering, truth and ``str`` of a handle itself, never by running the solution's methods:
equality and hashing compare by-value snapshots of the objects' state; ordering is refused; truth is
``True`` only for objects whose class defines neither ``__bool__`` nor ``__len__``; ``str`` and ``repr``
are a neutral description. Exception classes of the solution come back as local classes with the same
name and bases (so ``pytest.raises(mod.ParseError)`` works), raised with the args by value. The tests'
own objects given to the solution (a key function, a stream) stay here as handles the solution can call
and read public data and bound methods of, nothing else. A dead, hung or garbled child fails the test
that used it (``SolutionGone``) and every later one; it never stops the judge.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import inspect
import json
import operator
import os
import signal
import subprocess
import sys
import threading
import types

from .rpc import Endpoint, Exports, RemoteFault
from .wire import Channel, WireError, decode, encode

PACKAGE_MODULES = ("wire", "rpc", "landlock", "agent_host")
"""This package's modules the solution's process needs, in import order."""
REMOTE_DUNDERS = frozenset(
    {"__name__", "__qualname__", "__doc__", "__all__", "__version__", "__annotations__"}
)


class SolutionGone(Exception):
    """The solution's process exited, crashed, hung past the deadline or broke the protocol."""


BOOT = """
import json, sys, types
payload = json.loads(sys.stdin.buffer.read().decode('utf-8'))
name = payload['package']
package = types.ModuleType(name)
package.__path__ = []
package.__package__ = name
sys.modules[name] = package
for module_name, source in payload['modules']:
    module = types.ModuleType(name + '.' + module_name)
    module.__package__ = name
    sys.modules[module.__name__] = module
    setattr(package, module_name, module)
    exec(compile(source, '<isolation/' + module_name + '.py>', 'exec'), module.__dict__)
sys.modules[name + '.agent_host'].main()
"""


def _child_env(solution_root: str, tmp: str) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=solution_root, TMPDIR=tmp, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
    return env


class SolutionProcess:
    """The child that holds the solution's code, started on first use."""

    def __init__(self, judge_root: str, solution_root: str, tmp: str, deadline: float | None):
        self.judge_root, self.solution_root, self.tmp = judge_root, solution_root, tmp
        self.deadline = deadline
        self.child: subprocess.Popen | None = None
        self.gone: str | None = None
        self.exports = Exports("j", _describe_judge_object)
        self.mirrors: dict[str, type] = {}
        self.endpoint: Endpoint | None = None
        self.requests = 0
        self.lock = threading.RLock()

    def start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        here = os.path.dirname(os.path.abspath(__file__))
        modules = []
        for name in PACKAGE_MODULES:
            with open(os.path.join(here, name + ".py"), encoding="utf-8") as handle:
                modules.append([name, handle.read()])
        argv = [
            sys.executable,
            "-I",
            "-c",
            BOOT,
            str(to_child_r),
            str(from_child_w),
            self.judge_root,
            self.solution_root,
            self.tmp,
        ]
        self.child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            pass_fds=(to_child_r, from_child_w),
            cwd=self.solution_root,
            env=_child_env(self.solution_root, self.tmp),
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        try:
            self.child.stdin.write(
                json.dumps({"package": "ha_isolation_solution", "modules": modules}).encode()
            )
            self.child.stdin.close()
        except OSError:
            pass
        channel = Channel(from_child_r, to_child_w)
        self.endpoint = Endpoint(
            channel, self.exports, self.resolve, self.serve_callback, deadline=lambda: self.deadline
        )

    def request(self, message: dict, raw: bool = False):
        with self.lock:  # one conversation at a time: tests that use threads must not interleave frames
            if self.gone:
                raise SolutionGone(self.gone)
            if self.child is None:
                self.start()
            self.requests += 1
            try:
                return self.endpoint.request(message, raw=raw)
            except (WireError, RemoteFault) as exc:
                self.stop(f"the solution's process failed: {exc}")
                raise SolutionGone(self.gone) from None

    def stop(self, why: str = "stopped") -> None:
        self.gone = self.gone or why
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGKILL)
            except OSError:
                pass
            self.child.wait()

    # -- values from the child
    def resolve(self, data: dict):
        if data.get("side") == "j":
            return self.exports.get(data.get("id"))
        if isinstance(data.get("exc"), dict):
            return self.mirror(data["exc"], data.get("id"))
        return Handle(self, data)

    def mirror(self, info: dict, number=None) -> type:
        """A local exception class standing for one of the solution's: same name, mirrored bases."""
        key = str(info.get("key"))
        if key not in self.mirrors:
            bases = []
            for base in info.get("bases") or []:
                found = self.mirror(base) if isinstance(base, dict) else getattr(builtins, str(base), None)
                if isinstance(found, type) and issubclass(found, BaseException):
                    bases.append(_SAFE_BASES.get(found, found))
            bases = bases or [Exception]
            name = str(info.get("name") or "SolutionError")
            namespace = {
                "__module__": str(info.get("module") or "solution"),
                "__str__": _mirror_str,
                "_ha_handle_id": number,
            }
            try:
                self.mirrors[key] = type(
                    name if name.isidentifier() else "SolutionError", tuple(bases), namespace
                )
            except TypeError:  # bases that cannot be combined locally
                self.mirrors[key] = type(
                    name if name.isidentifier() else "SolutionError", (Exception,), namespace
                )
        if number is not None and self.mirrors[key]._ha_handle_id is None:
            self.mirrors[key]._ha_handle_id = number
        return self.mirrors[key]

    # -- requests from the child (callbacks into the tests' objects)
    def serve_callback(self, frame: dict):
        op = frame.get("op")
        decode_ = self.endpoint.decode
        if op == "call":
            target = self.exports.get(frame.get("h"))
            kwargs = decode_(frame.get("kwargs") or {"$": "dict", "v": []})
            return target(*decode_(frame.get("args") or []), **kwargs)
        if op == "getattr":
            target = self.exports.get(frame.get("h"))
            name = str(frame.get("name"))
            if name.startswith("_") and name not in CALLBACK_NAMES:
                raise AttributeError(f"the tests' objects do not show {name!r} to the solution")
            value = getattr(target, name)
            if name in CALLBACK_NAMES:
                if type(value) is str:
                    return value
                raise AttributeError(f"{name!r} of the tests' object is not a plain string")
            if (
                _crosses_by_value(value)
                or (inspect.ismethod(value) or inspect.isbuiltin(value))
                and getattr(value, "__self__", None) is target
            ):
                return value
            raise AttributeError(f"attribute {name!r} of the tests' object is neither data nor its method")
        if op == "operator" and frame.get("name") in _CALLBACK_OPERATORS:
            args = decode_(frame.get("args") or [])
            return _CALLBACK_OPERATORS[frame["name"]](*args)
        raise TypeError(f"the tests do not answer {op!r} requests from the solution")


CALLBACK_NAMES = frozenset({"__name__", "__qualname__", "__module__"})
"""Dunder names of the tests' objects the solution may read, as plain strings (decorators such as
``functools.wraps`` copy them); every other name starting with ``_`` stays hidden. A refusal is an
``AttributeError`` in the solution's process (``hasattr`` is False), never the end of that process."""
_CALLBACK_OPERATORS = {
    "iter": iter,
    "next": next,
    "len": len,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": operator.contains,
}
"""What the solution may do to the tests' objects besides calls: the container protocol (the objects' own
methods, as a bound-method call would run them)."""
_SAFE_BASES = {KeyboardInterrupt: Exception, GeneratorExit: Exception, SystemExit: SystemExit}


def _mirror_str(self) -> str:
    text = self.__dict__.get("_ha_text")
    return text if isinstance(text, str) else BaseException.__str__(self)


def _crosses_by_value(value) -> bool:
    try:
        encode(value, _refuse)
        return True
    except (_NotData, WireError):
        return False


class _NotData(Exception):
    pass


def _refuse(value):
    raise _NotData


def _describe_judge_object(value) -> dict:
    return {"kind": "function" if callable(value) else "object", "name": type(value).__name__}


# ---------------------------------------------------------------------------------------------- handles


def _link(handle):
    return object.__getattribute__(handle, "_ha_process"), object.__getattribute__(handle, "_ha_data")


def _operator(name):
    def method(self, *args):
        process, data = _link(self)
        encoded = [data, *[process.endpoint.encode(a) for a in args]]
        return process.request({"op": "operator", "name": name, "args": encoded})

    method.__name__ = f"__{name.strip('_')}__"
    return method


def _reflected(name):
    def method(self, other):
        process, data = _link(self)
        return process.request(
            {"op": "operator", "name": name, "args": [process.endpoint.encode(other), data]}
        )

    return method


def _canonical(data):
    """``data`` (a described value) in a form whose JSON is the same for equal values."""
    if isinstance(data, float) and data.is_integer():
        return int(data)
    if isinstance(data, list):
        return [_canonical(v) for v in data]
    if isinstance(data, dict):
        out = {k: _canonical(v) for k, v in data.items()}
        if data.get("$") in ("dict", "set", "frozenset", "Counter", "defaultdict"):
            out["v"] = sorted(out["v"], key=lambda item: json.dumps(item, sort_keys=True))
        if data.get("$") in ("OrderedDict", "defaultdict", "Counter"):
            out["$"] = "dict"
            out.pop("factory", None)
        return out
    return data


class Handle:
    """One of the solution's objects, held in its process (see the module docstring)."""

    __slots__ = ("_ha_process", "_ha_data", "__weakref__")

    def __init__(self, process: SolutionProcess, data: dict):
        object.__setattr__(self, "_ha_process", process)
        object.__setattr__(self, "_ha_data", data)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in REMOTE_DUNDERS:
            raise AttributeError(name)
        process, data = _link(self)
        return process.request({"op": "getattr", "h": data["id"], "name": name})

    def __setattr__(self, name, value):
        process, data = _link(self)
        process.request(
            {"op": "setattr", "h": data["id"], "name": name, "value": process.endpoint.encode(value)}
        )

    def __delattr__(self, name):
        process, data = _link(self)
        process.request({"op": "delattr", "h": data["id"], "name": name})

    def __call__(self, *args, **kwargs):
        process, data = _link(self)
        encode_ = process.endpoint.encode
        return process.request(
            {"op": "call", "h": data["id"], "args": encode_(list(args)), "kwargs": encode_(kwargs)}
        )

    def _ha_snapshot(self):
        process, data = _link(self)
        return process.request({"op": "snapshot", "h": data["id"]}, raw=True)

    def __eq__(self, other):
        if not isinstance(other, Handle):
            return NotImplemented
        mine, theirs = _link(self), _link(other)
        if mine[0] is theirs[0] and mine[1]["id"] == theirs[1]["id"]:
            return True
        return _decode_snapshot(self._ha_snapshot()) == _decode_snapshot(other._ha_snapshot())

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(json.dumps(_canonical(self._ha_snapshot()), sort_keys=True))

    def _ha_unordered(self, other):
        raise TypeError("the judge does not order the solution's objects; compare values instead")

    __lt__ = __le__ = __gt__ = __ge__ = _ha_unordered

    def __bool__(self):
        if _link(self)[1].get("truth") is True:
            return True
        raise TypeError(
            "the judge does not take the truth of the solution's objects; compare a value instead"
        )

    def __repr__(self):
        data = _link(self)[1]
        return f"<solution {data.get('kind', 'object')} {data.get('name', '?')}>"

    __str__ = __repr__

    def __format__(self, spec):
        return format(repr(self), spec)

    def __dir__(self):
        process, data = _link(self)
        return process.request({"op": "operator", "name": "dir", "args": [data]})

    def __instancecheck__(self, value):
        process, data = _link(self)
        return (
            process.request(
                {"op": "operator", "name": "isinstance", "args": [process.endpoint.encode(value), data]}
            )
            is True
        )

    def __subclasscheck__(self, value):
        process, data = _link(self)
        return (
            process.request(
                {"op": "operator", "name": "issubclass", "args": [process.endpoint.encode(value), data]}
            )
            is True
        )

    def __enter__(self):
        return _operator_call(self, "__enter__")

    def __exit__(self, kind, value, traceback):
        process, data = _link(self)
        return process.request({"op": "exit", "h": data["id"], "exc": process.endpoint.encode(value)})

    def __mro_entries__(self, bases):
        raise TypeError("a test cannot subclass the solution's class across the process boundary")

    def __reduce_ex__(self, protocol):
        raise TypeError("the solution's objects cannot be pickled by the judge")

    def __copy__(self):
        return _operator("copy")(self)

    def __deepcopy__(self, memo):
        return _operator("deepcopy")(self)


def _operator_call(handle, method: str):
    process, data = _link(handle)
    bound = process.request({"op": "getattr", "h": data["id"], "name": method})
    return bound()


for _name in (
    "getitem",
    "setitem",
    "delitem",
    "contains",
    "len",
    "iter",
    "next",
    "neg",
    "pos",
    "abs",
    "invert",
    "index",
    "int",
    "float",
    "complex",
    "round",
    "reversed",
    "length_hint",
):
    setattr(Handle, f"__{_name}__", _operator(_name))
for _name, _op in (
    ("add", "add"),
    ("sub", "sub"),
    ("mul", "mul"),
    ("truediv", "truediv"),
    ("floordiv", "floordiv"),
    ("mod", "mod"),
    ("pow", "pow"),
    ("matmul", "matmul"),
    ("lshift", "lshift"),
    ("rshift", "rshift"),
    ("and", "and_"),
    ("or", "or_"),
    ("xor", "xor"),
    ("divmod", "divmod"),
):
    setattr(Handle, f"__{_name}__", _operator(_op))
    setattr(Handle, f"__r{_name}__", _reflected(_op))


def _decode_snapshot(raw):
    def no_handles(data):
        raise WireError("a snapshot holds no handles")

    return decode(raw, no_handles)


# ---------------------------------------------------------------------------------------------- modules


class ProxyModule(types.ModuleType):
    """A module of the solution: every attribute not set by the import system is a request."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in REMOTE_DUNDERS:
            raise AttributeError(name)
        handle = self.__dict__.get("_ha_handle")
        if handle is None:
            raise AttributeError(name)
        try:
            return handle.__getattr__(name)
        except AttributeError as exc:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from exc

    def __setattr__(self, name, value):
        if name.startswith("_") or isinstance(value, ProxyModule) or "_ha_handle" not in self.__dict__:
            return types.ModuleType.__setattr__(self, name, value)
        return self.__dict__["_ha_handle"].__setattr__(name, value)

    def __delattr__(self, name):
        if name in self.__dict__:
            return types.ModuleType.__delattr__(self, name)
        return self.__dict__["_ha_handle"].__delattr__(name)

    def __dir__(self):
        return sorted(set(self.__dict__) | set(self.__dict__["_ha_handle"].__dir__()))


class SolutionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the solution's modules become proxies; everything else imports as usual."""

    def __init__(self, process: SolutionProcess, judge_root: str, solution_root: str):
        self.process = process
        self.judge_root = os.path.realpath(judge_root)
        self.solution_root = os.path.realpath(solution_root)
        self.proxied_tops: set[str] = set()

    def solution_path(self) -> list[str]:
        """``sys.path`` entries inside the judge's folder, mapped to the solution's tree."""
        out = []
        for entry in sys.path:
            real = os.path.realpath(entry or os.getcwd())
            if real == self.judge_root or real.startswith(self.judge_root + os.sep):
                mapped = os.path.join(self.solution_root, os.path.relpath(real, self.judge_root))
                out.append(os.path.normpath(mapped))
        return out

    def owner(self, top: str) -> str | None:
        """``"solution"`` when ``top`` resolves to the solution's tree first on ``sys.path``; None when the
        judge's files, the standard library or an installed package has it."""
        if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
            return None
        for entry in sys.path:
            real = os.path.realpath(entry or os.getcwd())
            inside = real == self.judge_root or real.startswith(self.judge_root + os.sep)
            spec = importlib.machinery.PathFinder.find_spec(top, [real])
            if spec is not None and (spec.loader is not None or not inside):
                return None  # a module of the judge's own files, or installed
            if inside:
                mapped = os.path.join(self.solution_root, os.path.relpath(real, self.judge_root))
                if _has_module(mapped, top):
                    return "solution"
        return None

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top not in self.proxied_tops:
            if "." in fullname or self.owner(top) is None:
                return None
            self.proxied_tops.add(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        answer = self.process.request(
            {"op": "import", "name": spec.name, "path": self.solution_path()}, raw=True
        )
        if not isinstance(answer, dict):
            raise SolutionGone("the solution's process answered an import with something else")
        module = ProxyModule(spec.name)
        handle = self.process.endpoint.decode(answer.get("module"))
        if not isinstance(handle, Handle):
            raise ImportError(f"{spec.name} did not import as a module")
        module.__dict__["_ha_handle"] = handle
        where = answer.get("file")
        if isinstance(where, str) and where:
            module.__dict__["__file__"] = where
        return module

    def exec_module(self, module):
        spec = module.__spec__
        if spec is not None and not self.process.gone:
            module.__dict__["__path__"] = []


def _has_module(folder: str, name: str) -> bool:
    return os.path.isfile(os.path.join(folder, name + ".py")) or os.path.isdir(os.path.join(folder, name))


def install(judge_root: str, solution_root: str, tmp: str, deadline: float | None) -> SolutionProcess:
    """Put the finder first on ``sys.meta_path``; return the (not yet started) solution process."""
    process = SolutionProcess(os.path.realpath(judge_root), os.path.realpath(solution_root), tmp, deadline)
    sys.meta_path.insert(0, SolutionFinder(process, judge_root, solution_root))
    return process
