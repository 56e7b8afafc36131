"""The solution's process: imports the solution's modules and answers the judge's requests about them.

Started by the judge (``judge_host.SolutionProcess``) as ``python -I -c BOOT``: the sources of this
package come on stdin, so the process reads nothing from the judge's folder, which ``landlock.confine``
then takes out of its reach before any solution code is imported. Everything here runs next to the
solution's code and may be rewritten by it; that is why nothing it says is trusted beyond being a value:
the judge decides every comparison itself.
"""

from __future__ import annotations

import copy
import importlib
import json
import operator
import os
import pickle
import sys
import threading
import types

from .rpc import Endpoint, Exports, RemoteFault
from .wire import CONTAINERS, Channel, WireError, builtin_base, encode, stdlib_class

OPERATORS = {
    name: getattr(operator, name)
    for name in (
        "getitem setitem delitem contains length_hint add sub mul truediv floordiv mod pow matmul "
        "lshift rshift and_ or_ xor neg pos abs invert index"
    ).split()
}
OPERATORS.update(
    len=len,
    iter=iter,
    next=next,
    int=int,
    float=float,
    complex=complex,
    round=round,
    divmod=divmod,
    reversed=reversed,
    isinstance=isinstance,
    issubclass=issubclass,
    dir=dir,
    copy=copy.copy,
    deepcopy=copy.deepcopy,
)


def describe(value) -> dict:
    """What the judge needs to know of a handle, decided here only for what no comparison depends on."""
    kind = "object"
    if isinstance(value, types.ModuleType):
        kind = "module"
    elif isinstance(value, type):
        kind = "class"
    elif callable(value):
        kind = "function"
    cls = type(value)
    truth = None if hasattr(cls, "__bool__") else "len" if hasattr(cls, "__len__") else True
    out = {
        "base": isinstance(value, CONTAINERS) and type(value) not in CONTAINERS,
        "kind": kind,
        "name": _name(value if kind in ("class", "function", "module") else cls),
        "truth": truth,
        "binds": isinstance(value, types.FunctionType),
    }
    if kind == "class" and issubclass(value, BaseException):
        out["exc"] = exception_class(value)
    return out


def exception_class(kind) -> dict:
    bases = []
    for base in kind.__bases__:
        if base.__module__ == "builtins":
            bases.append(base.__name__)
        elif isinstance(base, type) and issubclass(base, BaseException):
            bases.append(exception_class(base))
    return {
        "name": kind.__name__,
        "module": str(getattr(kind, "__module__", "")),
        "bases": bases,
        "key": f"{kind.__module__}.{kind.__qualname__}:{id(kind)}",
    }


def _name(value) -> str:
    try:
        return (
            f"{value.__module__}.{value.__qualname__}"
            if not isinstance(value, types.ModuleType)
            else value.__name__
        )
    except Exception:  # noqa: BLE001
        return "?"


MAX_STATE_DEPTH = 24
"""Objects nested deeper than this in a snapshot are reported by identity (the wire's depth limit counts
about four levels per object)."""
MAX_STATE_OBJECTS = 5000


def snapshot(value) -> dict:
    """How the judge compares two of the solution's objects (``eq``: ``identity`` when the class keeps
    ``object``'s equality, ``contents`` for a container subclass keeping its base's, else ``value``;
    ``hashable``) and, unless by identity, its state by value (``state``: a container's contents, or the
    class name, instance ``__dict__`` and slots, nested objects alike; cycles and depth bounded). The
    judge compares states itself, so no ``__eq__`` of the solution runs on its behalf; the state is this
    process's report, as any value the solution returns is."""
    cls = type(value)
    identity = getattr(cls, "__eq__", None) is object.__eq__
    plain = next((c for c in CONTAINERS if isinstance(value, c) and cls.__eq__ is c.__eq__), None)
    kind = "contents" if plain is not None else "identity" if identity else "value"
    pairs = [["eq", kind], ["hashable", getattr(cls, "__hash__", None) is not None]]
    if kind != "identity":
        try:  # a container subclass keeping its base's equality: its contents, as in-process
            state = _state(builtin_base(value) if plain is not None else value, 0, set())
            json.dumps(state)  # deep plain data (a cyclic list) fails here, not on the wire
        except (WireError, RecursionError, ValueError):
            state = {"$": "ref", "name": f"deep:{id(value)}"}  # too deep to report: only itself
        pairs.append(["state", state])
    return {"$": "dict", "v": pairs}  # already encoded: the state's tags are sent as they are


def _state(value, depth, seen):
    def inner(item):
        if isinstance(item, Callback):
            return {"$": "ref", "name": f"tests:{object.__getattribute__(item, '_data').get('id')}"}
        if isinstance(item, (types.ModuleType, type)):
            return {"$": "ref", "name": _name(item)}
        if isinstance(item, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            owner = getattr(item, "__self__", None)  # a bound method: its function and its object
            if owner is not None and not isinstance(owner, types.ModuleType):
                return {"$": "ref", "name": f"{_name(getattr(item, '__func__', item))}:{id(owner)}"}
            return {"$": "ref", "name": f"{_name(item)}:{id(item)}"}  # equal as functions are: itself
        if id(item) in seen:
            return {"$": "cycle"}
        if depth > MAX_STATE_DEPTH or len(seen) > MAX_STATE_OBJECTS:  # too deep to report: only itself
            return {"$": "ref", "name": f"deep:{id(item)}"}
        seen.add(id(item))
        state = {}
        try:
            state.update(object.__getattribute__(item, "__dict__"))
        except Exception:  # noqa: BLE001 - no instance dict
            pass
        for klass in type(item).__mro__:
            slots = getattr(klass, "__slots__", ())
            for slot in (
                (slots,) if isinstance(slots, str) else slots if isinstance(slots, (tuple, list)) else ()
            ):
                if slot in ("__weakref__", "__dict__"):
                    continue
                try:
                    state.setdefault(slot, object.__getattribute__(item, slot))
                except Exception:  # noqa: BLE001 - an unset slot
                    pass
        if isinstance(item, CONTAINERS):  # a container subclass: its contents too
            state["<contents>"] = builtin_base(item)
        if not state and stdlib_class(type(item)):  # a C type of the standard library (functools.partial)
            state = _reduced_state(item)
        if not state:
            return {"$": "ref", "name": f"stateless:{id(item)}"}  # nothing to compare: only itself
        return {"$": "obj", "cls": _name(type(item)), "state": _state(state, depth + 1, seen)}

    return encode(value, inner, depth)


def _reduced_state(item) -> dict:
    """The state a standard-library C object gives for pickling (``partial``: function, args, keywords)."""
    try:
        reduced = item.__reduce_ex__(2)
    except Exception:  # noqa: BLE001 - not reducible
        return {}
    if not isinstance(reduced, tuple) or len(reduced) < 2:
        return {}
    return {"reduce": tuple(reduced[1:3])}


def _calls_back(callback):
    def method(self, *args, **kwargs):
        return callback(self, *args, **kwargs)

    return method


class SolutionHost:
    """The request handler: import, attributes, calls, operators, snapshots, pickling."""

    def __init__(self, base_path: list[str]):
        self.base_path = base_path

    def handle(self, frame):
        op = frame.get("op")
        args = frame.get("args") or []
        if op == "import":
            return self.import_module(str(frame["name"]), [str(p) for p in frame.get("path") or []])
        target = self.endpoint.exports.get(frame.get("h")) if "h" in frame else None
        if op == "getattr":
            return getattr(target, str(frame["name"]))
        if op == "setattr":
            return setattr(target, str(frame["name"]), self.endpoint.decode(frame["value"]))
        if op == "delattr":
            return delattr(target, str(frame["name"]))
        if op == "call":
            kwargs = self.endpoint.decode(frame.get("kwargs") or {"$": "dict", "v": []})
            return target(*self.endpoint.decode(args), **kwargs)
        if op == "base":  # a container subclass's plain copy, for a comparison with plain data
            return builtin_base(target)
        if op == "operator":
            function = OPERATORS.get(str(frame.get("name")))
            if function is None:
                raise RemoteFault(f"unknown operator {frame.get('name')!r}")
            return function(*self.endpoint.decode(args))
        if op == "shadow":  # a subclass whose named methods call the tests' overrides back
            methods = self.endpoint.decode(frame.get("methods"))
            namespace = {str(n): _calls_back(c) for n, c in methods.items()}
            return type(str(frame.get("name") or "Shadow"), (target,), namespace)
        if op == "method_kind":
            name = str(frame.get("name"))
            for klass in getattr(target, "__mro__", ()):
                if name in vars(klass):
                    return "function" if isinstance(vars(klass)[name], types.FunctionType) else "other"
            return "none"
        if op == "snapshot":
            return _Raw(snapshot(target))
        if op == "pickle":  # the solution's own pickling, for a test's round trip
            return pickle.dumps(target, int(frame.get("protocol") or pickle.DEFAULT_PROTOCOL))
        if op == "unpickle":
            return pickle.loads(self.endpoint.decode(frame.get("v")))
        if op == "exit":
            value = self.endpoint.decode(frame.get("exc"))
            kind = type(value) if isinstance(value, BaseException) else None
            return type(target).__exit__(target, kind, value if kind else None, None)
        raise RemoteFault(f"unknown request {op!r}")

    def import_module(self, name, path):
        sys.path[:] = path + self.base_path
        importlib.invalidate_caches()
        module = importlib.import_module(name)
        return _Raw(
            {
                "module": self.endpoint.encode(module),
                "file": str(getattr(module, "__file__", "") or ""),
            }
        )


class _Raw:
    """An answer already described (an import's details): sent as it is."""

    def __init__(self, data):
        self.data = data


class AgentExports(Exports):
    """This process's exports: an object of the tests given to the solution goes back as the tests' own
    object, never as a new handle of this process."""

    def export(self, value):
        if isinstance(value, Callback):
            return {"$": "h", "side": "j", "id": object.__getattribute__(value, "_data").get("id")}
        return super().export(value)


def serve(read_fd: int, write_fd: int) -> None:
    host = SolutionHost(list(sys.path))
    exports = AgentExports("a", describe)
    channel = Channel(read_fd, write_fd)

    def resolve(data):
        if data.get("side") == "a":
            return exports.get(data.get("id"))
        return Callback(endpoint, data)

    endpoint = MainThreadEndpoint(channel, exports, resolve, host.handle)
    original = endpoint.encode
    endpoint.encode = lambda value: value.data if isinstance(value, _Raw) else original(value)
    host.endpoint = endpoint
    while True:
        frame = channel.receive()
        endpoint.send_answer(endpoint.serve(frame))


class MainThreadEndpoint(Endpoint):
    """Requests to the judge from the main thread only: the channel has one reader, the thread that
    serves the judge; an answer read by another thread would be lost to its asker."""

    def request(self, message, raw=False):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("the tests' objects can be reached from the solution's main thread only")
        return super().request(message, raw=raw)


class _Hidden:
    def __repr__(self):
        return "<a default of the tests>"


HIDDEN = _Hidden()
"""The default of a parameter of the tests' functions, as the solution sees it: there, never its value."""


class Callback:
    # A judge-side object given to the solution (a key function, a stream): calls, the container
    # protocol and public attributes reach it through the judge, which refuses the rest. No docstring:
    # ``__doc__`` of a test's object reads None here.

    __slots__ = ("_endpoint", "_data")

    def __init__(self, endpoint, data):
        object.__setattr__(self, "_endpoint", endpoint)
        object.__setattr__(self, "_data", data)

    def __call__(self, *args, **kwargs):
        endpoint = object.__getattribute__(self, "_endpoint")
        data = object.__getattribute__(self, "_data")
        return endpoint.request(
            {
                "op": "call",
                "h": data["id"],
                "args": endpoint.encode(list(args)),
                "kwargs": endpoint.encode(kwargs),
            }
        )

    def __getattr__(self, name):
        endpoint = object.__getattribute__(self, "_endpoint")
        data = object.__getattribute__(self, "_data")
        return endpoint.request({"op": "getattr", "h": data["id"], "name": name})

    def __iter__(self):
        return self._operator("iter")

    def __next__(self):
        return self._operator("next")

    def __len__(self):
        return self._operator("len")

    def __bool__(self):  # the tests' object's own truth, taken by the judge
        return self._operator("bool")

    def __enter__(self):  # the tests' context manager (a lock given to the solution)
        return self._operator("enter")

    def __exit__(self, kind, value, traceback):
        return self._operator("exit", value if isinstance(value, BaseException) else None)

    def __getitem__(self, key):
        return self._operator("getitem", key)

    def __setitem__(self, key, value):
        return self._operator("setitem", key, value)

    def __delitem__(self, key):
        return self._operator("delitem", key)

    def __contains__(self, key):
        return self._operator("contains", key)

    def _operator(self, name, *args):
        endpoint = object.__getattribute__(self, "_endpoint")
        data = object.__getattribute__(self, "_data")
        return endpoint.request(
            {"op": "operator", "name": name, "args": [data, *endpoint.encode(list(args))]}
        )

    def __repr__(self):
        return f"<the tests' {object.__getattribute__(self, '_data').get('name', 'object')}>"

    @property
    def __signature__(self):
        """The tests' function's parameters (names, kinds, defaults), for ``inspect`` in the solution."""
        import inspect

        endpoint = object.__getattribute__(self, "_endpoint")
        data = object.__getattribute__(self, "_data")
        described = endpoint.request({"op": "signature", "h": data["id"]})
        if described is None:
            return None
        return inspect.Signature(
            [
                inspect.Parameter(name, inspect._ParameterKind(kind), **({"default": HIDDEN} if has else {}))
                for name, kind, has in described
            ]
        )


Callback.__module__ = property(lambda self: self.__getattr__("__module__"))
"""``__module__`` of the tests' object (decorators copy it), not this class's."""


def main() -> None:
    """Entry from BOOT: the config is in ``sys.argv[1:]``: read fd, write fd, the judge's folder, the
    solution's folder, its temporary folder."""
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    judge_root, solution_root, tmp = sys.argv[3:6]
    from .landlock import confine

    try:
        confined = confine(judge_root, (solution_root, tmp))
    except OSError as exc:
        print(f"isolation: could not confine the solution's process: {exc}", file=sys.stderr)
        os._exit(3)
    os.environ["HA_CONFINED"] = str(confined)
    os.chdir(solution_root)
    package = __name__.rpartition(".")[0]
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]  # not a name the solution's code finds this process's host by
    serve(read_fd, write_fd)
