"""The judge's side: the solution's modules as proxies, backed by a separate, confined process.

``install(judge_root, solution_root, tmp, deadline)`` puts ``SolutionFinder`` first on ``sys.meta_path``. A
module the tests import that the solution's tree had when the judge started (and that neither the judge's
own files, the standard library nor an installed package provides, wherever they come on ``sys.path``)
becomes a ``ProxyModule``; its attributes, calls and operators are requests to ``SolutionProcess``, a child
Python that imports the real module. Values come back by value (``wire``); other objects as ``Handle``s. No
``__eq__``, ``__hash__``, ordering, truth or ``str`` of the solution's classes runs for the judge: two
different objects of the solution are compared here by the state their process reports of them (the same
report a method returning that state would give; an object with no state of its own, or of a class with
``object``'s equality, equals only itself), hashing agrees with that, ordering is refused, truth is ``True``
for objects whose class defines neither ``__bool__`` nor ``__len__`` and the length's for those with
``__len__`` only, and ``str`` and ``repr`` are a neutral description. A test's class may subclass a solution
class (``subclass``); a test may pickle a solution object (pickled and unpickled in the solution's process).
Exception classes of the solution come back as local classes with the same name and bases (so
``pytest.raises(mod.ParseError)`` works), raised with the args by value. The tests' own objects given to the
solution (a key function, a stream) stay here as handles it can call and read public data and bound methods
of, and never the runner's objects (``RUNNER_MODULES``). A dead, hung or garbled child fails the test that
used it (``SolutionGone``) and every later one; it never stops the judge.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
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
import weakref

from .rpc import Endpoint, Exports, RemoteFault
from .subclass import OverrideCall, SolutionSubclass, held_instance, make_held
from .subclass import subclass_base as _subclass_base
from .wire import CONTAINERS, Channel, WireError, encode, stdlib_class

PACKAGE_MODULES = ("wire", "rpc", "landlock", "agent_host")
"""This package's modules the solution's process needs, in import order."""
REMOTE_DUNDERS = frozenset(
    {"__name__", "__qualname__", "__doc__", "__all__", "__version__", "__annotations__"}
)


class SolutionRefused(TypeError):
    """The solution's process answered a request with a refusal (a value that cannot cross, say)."""


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
        self.exports = JudgeExports("j", _describe_judge_object)
        self.mirrors: dict[str, type] = {}
        self.subclass_bases: dict[int, type] = {}
        self.held_owners: weakref.WeakValueDictionary[int, object] = weakref.WeakValueDictionary()
        self.constructing: list[object] = []
        self.method_kinds: dict[tuple[int, str], str] = {}
        self.handles: weakref.WeakValueDictionary[int, Handle] = weakref.WeakValueDictionary()
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
            stdout=subprocess.DEVNULL,  # never the judge's own streams: pytest captures the tests' output
            stderr=subprocess.DEVNULL,  # in files the child could otherwise read back through them
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
            except RemoteFault as exc:  # a refusal answered in order: this call fails, the process stays
                raise SolutionRefused(str(exc)) from None
            except WireError as exc:
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

    def owner_of(self, held):
        """The test's instance that holds ``held`` (an object of a shadow class), or the one being made."""
        number = _link(held)[1].get("id") if type(held) is Handle else None
        instance = self.held_owners.get(number) if type(number) is int else None
        if instance is None and self.constructing:
            instance = self.constructing[-1]
            self.held_owners[number] = instance
        return instance

    # -- values from the child
    def resolve(self, data: dict):
        if data.get("side") == "j":
            return self.exports.get(data.get("id"))
        if isinstance(data.get("exc"), dict):
            return self.mirror(data["exc"], data.get("id"))
        number = data.get("id")
        known = self.handles.get(number) if type(number) is int else None
        if known is not None:  # one local object per remote one, so ``is`` holds as it would in-process
            return known
        handle = _new_handle(self, data)
        if type(number) is int:
            self.handles[number] = handle
        return handle

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
            name = name if name.isidentifier() else "SolutionError"
            namespace = {
                "__module__": str(info.get("module") or "solution"),
                "__str__": _mirror_str,
                "_ha_handle_id": number,
            }
            try:
                self.mirrors[key] = type(name, tuple(bases), namespace)
            except TypeError:  # bases that cannot be combined locally
                self.mirrors[key] = type(name, (Exception,), namespace)
        if number is not None and self.mirrors[key]._ha_handle_id is None:
            self.mirrors[key]._ha_handle_id = number
        return self.mirrors[key]

    # -- requests from the child (callbacks into the tests' objects)
    def serve_callback(self, frame: dict):
        op = frame.get("op")
        decode_ = self.endpoint.decode
        if op == "call":
            target = self.exports.get(frame.get("h"))
            _check_reachable(target)
            kwargs = decode_(frame.get("kwargs") or {"$": "dict", "v": []})
            return target(*decode_(frame.get("args") or []), **kwargs)
        if op == "getattr":
            target = self.exports.get(frame.get("h"))
            _check_reachable(target)
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
        if op == "signature":  # parameters by name, kind and default, for ``inspect`` in the solution
            target = self.exports.get(frame.get("h"))
            _check_reachable(target)
            try:
                signature = inspect.signature(target)
            except (TypeError, ValueError):
                return None
            return [  # whether a parameter has a default, never its value (a test's data)
                [p.name, int(p.kind), p.default is not inspect.Parameter.empty]
                for p in signature.parameters.values()
            ]
        if op == "operator" and frame.get("name") in _CALLBACK_OPERATORS:
            args = decode_(frame.get("args") or [])
            if args:
                _check_reachable(args[0])
            return _CALLBACK_OPERATORS[frame["name"]](*args)
        raise TypeError(f"the tests do not answer {op!r} requests from the solution")


RUNNER_MODULES = ("unittest.", "_pytest", "pytest", "pluggy", "ha_isolation", "importlib", "sys", "gc")
"""Where the runner's own objects come from (``unittest.mock`` excepted): the solution may not call or read
them, whatever route it got them by (a ``load_tests`` handed the loader and the real suite, a test
passing ``self``), so it cannot run, skip or report the tests' cases itself."""


def _from_runner(module: object) -> bool:
    name = str(module or "")
    if name == "unittest.mock" or name.startswith("unittest.mock."):
        return False
    return name == "unittest" or any(
        name == m.rstrip(".") or name.startswith(m if m.endswith(".") else m + ".") for m in RUNNER_MODULES
    )


def _is_mock(value) -> bool:
    """An object of ``unittest.mock`` (by its real class, never ``__class__``, which a spec sets)."""
    return any(str(getattr(k, "__module__", "")) == "unittest.mock" for k in type(value).__mro__)


def _check_reachable(target) -> None:
    """Refuse the solution's request when ``target`` belongs to the runner (see ``RUNNER_MODULES``)."""
    if type(target) is OverrideCall:  # a test's override, called back for its own instance
        return
    seen = 0
    while isinstance(target, functools.partial) and seen < 20:
        target, seen = target.func, seen + 1
    owner = (
        getattr(target, "__self__", None) if inspect.ismethod(target) or inspect.isbuiltin(target) else None
    )
    if isinstance(owner, types.ModuleType):  # a module-level built-in function (``abs``, ``len``)
        owner = None
    if owner is not None and _is_mock(owner):
        raise TypeError("the solution may call the tests' mocks, not their methods (configure_mock, ...)")
    if isinstance(target, types.ModuleType):
        raise TypeError("the solution may not reach the tests' modules")
    function = getattr(target, "__func__", None) if inspect.ismethod(target) else None
    if isinstance(function, types.FunctionType) and not _from_runner(function.__module__):
        owner = None  # a method the tests wrote (on a TestCase too): theirs to call, as a function
    for value in (target, owner):
        if value is None:
            continue
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) and _from_runner(
            value.__module__
        ):
            raise TypeError("the solution may not call the test runner's functions")
        if isinstance(value, type):
            classes = value.__mro__
        else:
            classes = type(value).__mro__
        if any(_from_runner(getattr(klass, "__module__", "")) for klass in classes):
            raise TypeError("the solution may not reach the test runner's objects")


class JudgeExports(Exports):
    """The judge's exports: a handle, module proxy or mirrored exception class of the solution goes back
    as the solution's own object, never as a callback to the judge."""

    def export(self, value):
        if type(value) is Handle:  # exact: a mock made with a handle as its spec claims the class
            data = object.__getattribute__(value, "_ha_data")
            return {"$": "h", "side": "a", "id": data["id"]}
        if SolutionSubclass in type(value).__mro__:  # a test's subclass instance: its solution object
            return self.export(held_instance(value))
        if isinstance(value, ProxyModule) and "_ha_handle" in value.__dict__:
            return self.export(value.__dict__["_ha_handle"])
        number = value.__dict__.get("_ha_handle_id") if isinstance(value, type) else None
        if type(number) is int:
            return {"$": "h", "side": "a", "id": number}
        return super().export(value)


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
    "bool": bool,
    "enter": lambda target: type(target).__enter__(target),
    "exit": lambda target, exc=None: type(target).__exit__(target, type(exc) if exc else None, exc, None),
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


def _new_handle(process: SolutionProcess, data: dict) -> Handle:
    handle = object.__new__(Handle)
    object.__setattr__(handle, "_ha_process", process)
    object.__setattr__(handle, "_ha_data", data)
    return handle


class Handle:
    """One of the solution's objects, held in its process (see the module docstring); made by
    ``_new_handle``."""

    __slots__ = ("_ha_process", "_ha_data", "__weakref__")

    def __init__(self, instance, *args, **kwargs):
        """``Base.__init__(self, ...)`` in a test's subclass of the solution class ``Base``: makes the
        instance's object in the solution's process."""
        if SolutionSubclass not in type(instance).__mro__ or _link(self)[1].get("kind") != "class":
            raise TypeError("only an instance of a test's subclass is initialised through a solution class")
        make_held(instance, args, kwargs)

    def _ha_method_kind(self, name: str) -> str:
        """For a class: ``function`` when ``name`` is a plain function in its class dicts (a method),
        else ``other`` or ``none``; cached."""
        process, data = _link(self)
        key = (data["id"], name)
        if key not in process.method_kinds:
            process.method_kinds[key] = str(
                process.request({"op": "method_kind", "h": data["id"], "name": name})
            )
        return process.method_kinds[key]

    def _ha_shadow_class(self, name: str, overrides: list[str]):
        """A subclass of this solution class made in the solution's process whose methods ``overrides``
        call back the test's methods (``subclass.OverrideCall``)."""
        process, data = _link(self)
        calls = {n: OverrideCall(process.owner_of, n) for n in overrides}
        return process.request(
            {"op": "shadow", "h": data["id"], "name": name, "methods": process.endpoint.encode(calls)}
        )

    @contextlib.contextmanager
    def _ha_constructing(self, instance):
        process = _link(self)[0]
        process.constructing.append(instance)
        try:
            yield
        finally:
            process.constructing.pop()

    def _ha_own(self, held, instance) -> None:
        if type(held) is Handle:
            _link(self)[0].held_owners[_link(held)[1]["id"]] = instance

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in REMOTE_DUNDERS:
            raise AttributeError(name)
        return self._ha_attr(name)

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

    def _ha_same(self, other) -> bool:
        mine, theirs = _link(self), _link(other)
        return mine[0] is theirs[0] and mine[1]["id"] == theirs[1]["id"]

    def __eq__(self, other):
        """The same object is equal to itself. Two different objects of the solution are compared here,
        by the state its process reports (``agent_host.snapshot``), never by their ``__eq__``: equal
        when both classes define their own equality and the states (class name, instance data) are
        equal; an object of a class with ``object``'s equality equals only itself. Against plain data, a
        container subclass compares by its plain copy; against a local object of a standard-library
        class (``argparse.Namespace``), by that object's instance data."""
        if type(other) is not Handle:
            if _link(self)[1].get("base") is True and isinstance(other, CONTAINERS):
                process, data = _link(self)  # a container subclass against plain data: its plain copy
                return process.request({"op": "base", "h": data["id"]}) == other
            theirs = _local_state(other)
            if theirs is not None:
                mine = _snapshot(self)
                return mine.get("eq") == "value" and mine.get("state") == theirs
            return NotImplemented
        if self._ha_same(other):
            return True
        mine, theirs = _snapshot(self), _snapshot(other)
        if mine.get("eq") == "identity" or mine.get("eq") != theirs.get("eq"):
            return False  # a class with object's equality: different objects are different
        return mine.get("state") == theirs.get("state")

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        """Consistent with ``__eq__``: an object of a class with ``object``'s equality hashes by its
        identity, one with its own equality by its class (equal states always share it)."""
        process, data = _link(self)
        shot = _snapshot(self)
        if not shot.get("hashable"):
            raise TypeError(f"unhashable type: {data.get('name', '?')!r}")
        state = shot.get("state")
        if shot.get("eq") == "contents":
            return hash(state)  # a tuple's contents, as the tuple hashes (unhashable items refused)
        if shot.get("eq") != "value":
            return hash((id(process), data["id"]))
        return hash(state[1] if isinstance(state, tuple) and len(state) == 3 else type(state).__name__)

    def _ha_unordered(self, other):
        raise TypeError("the judge does not order the solution's objects; compare values instead")

    __lt__ = __le__ = __gt__ = __ge__ = _ha_unordered

    def __bool__(self):
        """True for a class without ``__bool__`` and ``__len__``; for one with ``__len__`` only, whether
        its length (a value, as ``len()`` gives) is not 0; refused for a class with its own ``__bool__``."""
        truth = _link(self)[1].get("truth")
        if truth is True:
            return True
        if truth == "len":
            length = self.__len__()
            if type(length) is int:
                return length != 0
        raise TypeError(
            "the judge does not take the truth of the solution's objects; compare a value instead"
        )

    def __repr__(self):
        data = _link(self)[1]
        return f"<solution {data.get('kind', 'object')} {data.get('name', '?')}>"

    def __get__(self, instance, owner=None):
        """A function of the solution stored on a test's class binds to the test's instance, as a
        function does; any other object of the solution is itself there."""
        if instance is None or _link(self)[1].get("binds") is not True:
            return self
        return types.MethodType(self, instance)

    @property
    def __doc__(self):  # the solution object's docstring, not this class's
        return self._ha_attr("__doc__")

    __str__ = __repr__

    def __format__(self, spec):
        return format(repr(self), spec)

    def __dir__(self):
        process, data = _link(self)
        return process.request({"op": "operator", "name": "dir", "args": [data]})

    def __instancecheck__(self, value):
        return _reflected("isinstance")(self, value) is True

    def __subclasscheck__(self, value):
        return _reflected("issubclass")(self, value) is True

    def __enter__(self):
        return _operator_call(self, "__enter__")

    def __exit__(self, kind, value, traceback):
        """The solution's ``__exit__`` runs, but it cannot swallow a failing assertion of the tests or
        the runner's own exceptions (a skip, a failure): the verdict rests on the tests' checks."""
        process, data = _link(self)
        swallowed = process.request({"op": "exit", "h": data["id"], "exc": process.endpoint.encode(value)})
        if isinstance(value, AssertionError) or (
            isinstance(value, BaseException) and not isinstance(value, Exception)
        ):
            return False
        return swallowed

    def __mro_entries__(self, bases):
        if _link(self)[1].get("kind") != "class":
            raise TypeError("only a class of the solution can be subclassed")
        process, data = _link(self)
        known = process.subclass_bases.get(data["id"])
        if known is None:
            known = process.subclass_bases[data["id"]] = _subclass_base(self, self.__dir__())
        return (known,)

    def __reduce_ex__(self, protocol):
        """Pickled by the solution's process (its own ``__reduce__``), unpickled there again: a test's
        round trip gets a new object of the solution, never code run in the judge."""
        process, data = _link(self)
        blob = process.request({"op": "pickle", "h": data["id"], "protocol": min(int(protocol), 5)})
        if type(blob) is not bytes:
            raise TypeError("the solution's pickling did not give bytes")
        return (_unpickled, (blob,))

    def _ha_attr(self, name: str):
        """The solution object's attribute ``name``, read in its process whatever the name (the judge's
        own uses: special methods, ``__doc__``; ``__getattr__`` filters what the tests may read)."""
        process, data = _link(self)
        return process.request({"op": "getattr", "h": data["id"], "name": name})

    def __copy__(self):
        return _operator("copy")(self)

    def __deepcopy__(self, memo):
        return _operator("deepcopy")(self)


def _snapshot(handle) -> dict:
    process, data = _link(handle)
    shot = process.request({"op": "snapshot", "h": data["id"]})
    if not isinstance(shot, dict):
        raise SolutionRefused("the solution's process sent no snapshot")
    return shot


def _local_state(value):
    """A judge-side object of a standard-library class as a snapshot's state (``("<object>", class,
    data)``), or None when it is not one or its instance data is not plain data."""
    kind = type(value)
    if not stdlib_class(kind) or getattr(kind, "__eq__", None) is object.__eq__:  # identity: never equal
        return None
    try:
        data = dict(object.__getattribute__(value, "__dict__"))
    except (AttributeError, TypeError):
        return None
    return ("<object>", f"{kind.__module__}.{kind.__qualname__}", data) if _crosses_by_value(data) else None


_ACTIVE: list[SolutionProcess] = []
"""The solution process of this judge (one per run), for ``_unpickled``."""


def _unpickled(blob: bytes):
    if not _ACTIVE:
        raise TypeError("no solution process to unpickle the solution's object in")
    process = _ACTIVE[0]
    return process.request({"op": "unpickle", "v": process.endpoint.encode(blob)})


def _operator_call(handle, method: str):
    return handle._ha_attr(method)()


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
            if name == "__all__":  # ``from m import *`` of a module without one: its public names
                return [n for n in handle.__dir__() if isinstance(n, str) and not n.startswith("_")]
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

    def __init__(self, process: SolutionProcess, judge_root: str, solution_root: str, task_modules=()):
        self.process = process
        self.task_modules = frozenset(task_modules)
        self.judge_root = os.path.realpath(judge_root)
        self.solution_root = os.path.realpath(solution_root)
        self.proxied_tops: set[str] = set()
        self.listing = TreeListing(self.solution_root)

    def judge_entries(self) -> list[str]:
        """``sys.path`` entries inside the judge's folder, as real paths, in order."""
        entries = [os.path.realpath(entry or os.getcwd()) for entry in sys.path]
        return [e for e in entries if e == self.judge_root or e.startswith(self.judge_root + os.sep)]

    def solution_path(self) -> list[str]:
        """``sys.path`` entries inside the judge's folder, mapped to the solution's tree."""
        return [
            os.path.normpath(os.path.join(self.solution_root, os.path.relpath(e, self.judge_root)))
            for e in self.judge_entries()
        ]

    def owner(self, top: str) -> str | None:
        """``"solution"`` when ``top`` is a module of the solution's tree (as listed before its process
        started) at an entry of ``sys.path`` inside the judge's folder; None when the judge's own files,
        the standard library or an installed package has it, wherever they come on the path (an agent's
        ``numpy/`` never stands in for the installed one), except a module the task's own starting
        workspace ships (``task_modules``: the code under judgement, installed or not)."""
        if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
            return None
        entries = [os.path.realpath(entry or os.getcwd()) for entry in sys.path]
        inside = self.judge_entries()
        for entry in entries:
            if top in self.task_modules and entry not in inside:
                continue  # an installed copy of the task's own package does not stand in for it
            spec = importlib.machinery.PathFinder.find_spec(top, [entry])
            if spec is not None and (spec.loader is not None or entry not in inside):
                return None  # a module of the judge's own files, or installed
        for entry in inside:
            folder = os.path.normpath(os.path.relpath(entry, self.judge_root))
            if self.listing.has_module(folder, top):
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
        """Nothing runs here: the module ran in the solution's process (``create_module``)."""


class TreeListing:
    """The solution tree's folders and Python files, listed once when the judge starts (before the
    solution's process runs, so a module it writes later never becomes importable here)."""

    MAX_ENTRIES = 50_000

    def __init__(self, root: str):
        self.files: set[str] = set()
        self.folders: set[str] = set()
        count = 0
        for folder, dirs, files in os.walk(root):
            rel = os.path.normpath(os.path.relpath(folder, root))
            self.folders.add(rel)
            self.files.update(os.path.normpath(os.path.join(rel, f)) for f in files if f.endswith(".py"))
            count += len(dirs) + len(files)
            if count > self.MAX_ENTRIES:
                break

    def has_module(self, folder: str, name: str) -> bool:
        base = os.path.normpath(os.path.join(folder, name))
        return base + ".py" in self.files or base in self.folders


def install(
    judge_root: str, solution_root: str, tmp: str, deadline: float | None, task_modules=()
) -> SolutionProcess:
    """Put the finder first on ``sys.meta_path``; return the (not yet started) solution process."""
    process = SolutionProcess(os.path.realpath(judge_root), os.path.realpath(solution_root), tmp, deadline)
    _ACTIVE[:] = [process]
    sys.meta_path.insert(0, SolutionFinder(process, judge_root, solution_root, task_modules))
    return process
