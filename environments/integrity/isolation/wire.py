"""The data-only boundary between the judge (the tests) and the solution's process: values and frames.

Values cross **by value** when they are plain data: None, bool, int, float, complex, str, bytes, bytearray,
list, tuple, dict, set, frozenset, Decimal, Fraction, the datetime types, ranges, slices, paths, the
``collections`` containers; enum members cross as their value; subclasses of the built-in scalars and
containers cross as their built-in base (read through the base type's own slots, so no method of the
subclass runs); named tuples as a named tuple of the same name and fields; exceptions as a rebuilt
exception; classes of ``builtins`` (``int``, ``ValueError``) by name, as the same class (never built-in
functions). Anything else stays in its process as a **handle** (``{"$": "h", ...}``) that the other side can
only reach through requests. Decoding builds fresh built-in objects from JSON and never runs code of the
sender's classes, so whatever the solution's process sends can only be a value or a handle.

Frames are a 4-byte big-endian length and UTF-8 JSON, at most ``MAX_FRAME_BYTES``. Standard library only
(Python 3.8+): this file is copied into the verifier's sandbox and into the solution's process.
"""

from __future__ import annotations

import base64
import collections
import datetime
import decimal
import enum
import fractions
import json
import math
import os
import pathlib
import select
import struct
import time

MAX_FRAME_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 200
_LEN = struct.Struct(">I")


class WireError(Exception):
    """A frame or value that breaks the protocol (too large, too deep, not the format)."""


class ChannelClosed(WireError):
    """The other process closed its end, exited or crashed."""


class ChannelTimeout(WireError):
    """No frame came before the deadline."""


# ---------------------------------------------------------------------------------------------- encode


def encode(value, export, depth=0):
    """A JSON-able description of ``value``; ``export(value)`` makes the handle description of anything
    that is not data. Exact types decide; no method of ``value``'s class is called for data."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH} levels cannot cross")
    down = depth + 1
    if kind is list:
        return [encode(v, export, down) for v in value]
    if kind is tuple:
        return {"$": "tuple", "v": [encode(v, export, down) for v in value]}
    if kind is dict:
        return {
            "$": "dict",
            "v": [[encode(k, export, down), encode(v, export, down)] for k, v in value.items()],
        }
    if kind is set or kind is frozenset:
        return {"$": kind.__name__, "v": [encode(v, export, down) for v in value]}
    if kind is bytes or kind is bytearray:
        return {"$": kind.__name__, "v": base64.b64encode(value).decode("ascii")}
    if kind is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    if kind is decimal.Decimal:
        return {"$": "decimal", "v": str(value)}
    if kind is fractions.Fraction:
        return {"$": "fraction", "v": [value.numerator, value.denominator]}
    if kind in _TIMES:
        return {"$": kind.__name__, "v": value.isoformat()}
    if kind is datetime.timedelta:
        return {"$": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind is range:
        return {"$": "range", "v": [value.start, value.stop, value.step]}
    if kind is slice:
        return {"$": "slice", "v": [encode(v, export, down) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, datetime.tzinfo):
        fixed = _fixed_offset(value)
        if fixed is not None:
            return fixed
    if kind in _COLLECTIONS:
        return _encode_collection(value, kind, export, down)
    if isinstance(value, pathlib.PurePath) and kind.__module__ == "pathlib":
        return {"$": "path", "v": str(value), "pure": not isinstance(value, pathlib.Path)}
    if isinstance(value, enum.Enum):
        return encode(value._value_, export, down)
    if isinstance(value, BaseException):
        return encode_exception(value, export, down)
    if kind is type and _is_builtin_class(value):
        return {"$": "builtin", "v": value.__name__}
    if isinstance(value, tuple) and isinstance(getattr(kind, "_fields", None), tuple):
        return {
            "$": "ntuple",
            "name": kind.__name__,
            "fields": [str(f) for f in kind._fields],
            "v": [encode(v, export, down) for v in tuple.__iter__(value)],
        }
    if not isinstance(value, CONTAINERS):  # a container subclass has state and methods: a handle
        base = builtin_base(value)
        if base is not None:
            return encode(base, export, depth)
    return export(value)


def _fixed_offset(zone):
    """A time zone as its fixed offset and name (what ``datetime`` needs of it); None when it has no
    offset without a date (one that changes with the date stays a handle)."""
    try:
        offset, name = zone.utcoffset(None), zone.tzname(None)
    except Exception:  # noqa: BLE001 - a zone that needs a date
        return None
    if type(offset) is not datetime.timedelta:
        return None
    name = str.__str__(name) if isinstance(name, str) else None
    return {"$": "tz", "v": [offset.days, offset.seconds, offset.microseconds], "name": name}


CONTAINERS = (list, dict, set, frozenset, tuple, bytearray)
"""Subclasses of these stay in their process as handles (an ``LRU(dict)`` must keep its behaviour);
their by-value copy (``builtin_base``) is what a comparison with plain data uses."""


_TIMES = (datetime.date, datetime.datetime, datetime.time)
_COLLECTIONS = (collections.OrderedDict, collections.Counter, collections.defaultdict, collections.deque)
_FACTORIES = {"list": list, "int": int, "set": set, "dict": dict, "str": str, "float": float}


def _encode_collection(value, kind, export, down):
    if kind is collections.deque:
        return {"$": "deque", "v": [encode(v, export, down) for v in value], "maxlen": value.maxlen}
    pairs = [[encode(k, export, down), encode(v, export, down)] for k, v in dict.items(value)]
    out = {"$": kind.__name__, "v": pairs}
    if kind is collections.defaultdict:
        factory = value.default_factory
        out["factory"] = factory.__name__ if factory in _FACTORIES.values() else None
    return out


def stdlib_class(cls) -> bool:
    """A class of a standard-library module other than ``builtins`` (``argparse.Namespace``,
    ``functools.partial``): both sides have it, the solution did not write it."""
    import sys

    module = str(getattr(cls, "__module__", "") or "")
    return module.split(".")[0] in getattr(sys, "stdlib_module_names", ()) and module != "builtins"


def builtin_base(value):
    """A subclass of a built-in scalar or container as an exact built-in copy, read through the built-in
    type's own slot (never the subclass's methods); None for anything else."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, bytearray):
        return bytearray(memoryview(value))
    if isinstance(value, bytes):
        return bytes(memoryview(value))
    if isinstance(value, list):
        return list.copy(value)
    if isinstance(value, dict):
        return dict.copy(value)
    if isinstance(value, tuple):
        return tuple.__getnewargs__(value)[0]
    if isinstance(value, (set, frozenset)):
        return set(set.__iter__(value)) if isinstance(value, set) else frozenset(frozenset.__iter__(value))
    return None


_NOT_SHARED = ("KeyboardInterrupt", "GeneratorExit", "SystemExit")


def _is_builtin_class(value):
    """A class of the ``builtins`` module (``int``, ``ValueError``): crosses by name, as the same class on
    the other side, since both sides have it; never the runner-stopping exceptions."""
    import builtins

    name = getattr(value, "__name__", None)
    return (
        type(name) is str
        and name not in _NOT_SHARED
        and value.__module__ == "builtins"
        and getattr(builtins, name, None) is value
    )


def _builtin_class(d, v, sub):
    import builtins

    value = getattr(builtins, str(v), None)
    if not (isinstance(value, type) and _is_builtin_class(value)):
        raise WireError(f"{v!r} is not a built-in class")
    return value


def encode_exception(exc, export, depth=0):
    """An exception as its class (a built-in name, or the handle of the solution's class) and its args;
    ``text`` is its message as its own process rendered it."""
    kind = type(exc)
    try:
        args = [encode(a, export, depth + 1) for a in BaseException.__getattribute__(exc, "args")]
    except Exception:  # noqa: BLE001 - args that cannot cross leave the message only
        args = []
    try:
        text = str(exc)
        text = str.__str__(text) if isinstance(text, str) else ""
    except Exception:  # noqa: BLE001 - a __str__ that raises
        text = ""
    cls = kind.__name__ if _is_builtin_exception(kind) else export(kind)
    return {"$": "exc", "cls": cls, "args": args, "text": text[:10000]}


def _is_builtin_exception(kind):
    import builtins

    return kind.__module__ == "builtins" and getattr(builtins, kind.__name__, None) is kind


# ---------------------------------------------------------------------------------------------- decode


def decode(data, resolve, depth=0):
    """The value ``data`` describes; ``resolve(description)`` turns a handle or an exception class that
    is not built-in into this side's object. Unknown shapes raise ``WireError``."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if depth > MAX_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_DEPTH} levels cannot cross")
    down = depth + 1
    if type(data) is list:
        return [decode(v, resolve, down) for v in data]
    if type(data) is not dict or type(data.get("$")) is not str:
        raise WireError("a value of an unknown shape crossed the boundary")
    tag, v = data["$"], data.get("v")
    try:
        if tag == "h":
            return resolve(data)
        if tag == "exc":
            return decode_exception(data, resolve, down)
        maker = _DECODERS.get(tag)
        if maker is None:
            raise WireError(f"unknown value tag {tag!r}")
        return maker(data, v, lambda x: decode(x, resolve, down))
    except WireError:
        raise
    except (TypeError, ValueError, KeyError, ArithmeticError, OverflowError) as exc:
        raise WireError(f"a malformed {tag!r} value crossed the boundary: {exc}") from None


def _pairs(v, sub):
    return [(sub(k), sub(x)) for k, x in v]


def _defaultdict(d, v, sub):
    factory = _FACTORIES.get(d.get("factory") or "")
    return collections.defaultdict(factory, _pairs(v, sub))


def _namedtuple(d, v, sub):
    fields = [str(f) for f in d["fields"]]
    values = [sub(x) for x in v]
    if len(values) != len(fields):  # a subclass with fields of its own: the values still cross
        return tuple(values)
    kind = _named_tuple_class(str(d["name"]), tuple(fields))
    return kind(*values)


_NAMED = {}


def _named_tuple_class(name, fields):
    key = (name, fields)
    if key not in _NAMED:
        safe = name if name.isidentifier() else "Result"
        _NAMED[key] = collections.namedtuple(safe, fields, rename=True)
    return _NAMED[key]


def _path(d, v, sub):
    return pathlib.PurePath(str(v)) if d.get("pure") else pathlib.Path(str(v))


_DECODERS = {
    "float": lambda d, v, sub: float(str(v)),
    "tuple": lambda d, v, sub: tuple(sub(x) for x in v),
    "dict": lambda d, v, sub: dict(_pairs(v, sub)),
    "set": lambda d, v, sub: {sub(x) for x in v},
    "frozenset": lambda d, v, sub: frozenset(sub(x) for x in v),
    "bytes": lambda d, v, sub: base64.b64decode(str(v).encode("ascii"), validate=True),
    "bytearray": lambda d, v, sub: bytearray(base64.b64decode(str(v).encode("ascii"), validate=True)),
    "complex": lambda d, v, sub: complex(float(v[0]), float(v[1])),
    "decimal": lambda d, v, sub: decimal.Decimal(str(v)),
    "fraction": lambda d, v, sub: fractions.Fraction(int(v[0]), int(v[1])),
    "date": lambda d, v, sub: datetime.date.fromisoformat(str(v)),
    "datetime": lambda d, v, sub: datetime.datetime.fromisoformat(str(v)),
    "time": lambda d, v, sub: datetime.time.fromisoformat(str(v)),
    "timedelta": lambda d, v, sub: datetime.timedelta(
        days=int(v[0]), seconds=int(v[1]), microseconds=int(v[2])
    ),
    "tz": lambda d, v, sub: datetime.timezone(
        datetime.timedelta(days=int(v[0]), seconds=int(v[1]), microseconds=int(v[2])),
        *([str(d["name"])] if isinstance(d.get("name"), str) else []),
    ),
    "range": lambda d, v, sub: range(int(v[0]), int(v[1]), int(v[2])),
    "OrderedDict": lambda d, v, sub: collections.OrderedDict(_pairs(v, sub)),
    "Counter": lambda d, v, sub: collections.Counter(dict(_pairs(v, sub))),
    "defaultdict": _defaultdict,
    "deque": lambda d, v, sub: collections.deque([sub(x) for x in v], d.get("maxlen")),
    "builtin": _builtin_class,
    "ntuple": _namedtuple,
    "path": _path,
    "slice": lambda d, v, sub: slice(*sub(v)),
    "obj": lambda d, v, sub: ("<object>", str(d["cls"]), sub(d["state"])),
    "ref": lambda d, v, sub: ("<ref>", str(d["name"])),
    "cycle": lambda d, v, sub: ("<cycle>",),
}
"""``obj``, ``ref`` and ``cycle`` appear only in snapshots (``agent_host.snapshot``): plain tuples here,
compared as data by the judge."""


def decode_exception(data, resolve, depth=0):
    """A fresh exception: a built-in class by name (anything else is a ``RuntimeError``), or the class
    ``resolve`` gives for a handle; its args decoded, its message kept for ``str``."""
    import builtins

    cls = data.get("cls")
    if isinstance(cls, dict):
        kind = resolve(cls)
    else:
        kind = getattr(builtins, str(cls), None)
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):
        kind = RuntimeError
    kind = _SAFE_EXCEPTIONS.get(kind, kind)
    args = tuple(decode(a, resolve, depth + 1) for a in (data.get("args") or []))
    try:
        exc = kind(*args)
    except Exception:  # noqa: BLE001 - a class that wants other arguments: keep the args as data
        exc = kind.__new__(kind)
        exc.args = args
    text = data.get("text")
    if isinstance(text, str) and not _is_builtin_exception(kind):
        exc.__dict__["_ha_text"] = text
    return exc


class SolutionInterrupted(Exception):
    """The solution raised ``KeyboardInterrupt`` or ``GeneratorExit``: a failure, never the runner's stop."""


_SAFE_EXCEPTIONS = {KeyboardInterrupt: SolutionInterrupted, GeneratorExit: SolutionInterrupted}
"""Exceptions that would stop the judge's runner; they come back as a plain failure."""


# ---------------------------------------------------------------------------------------------- frames


def dumps(message):
    try:
        return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError, RecursionError) as exc:
        raise WireError(f"a message could not be encoded: {exc}") from None


def loads(raw):
    try:
        return json.loads(raw.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError, MemoryError) as exc:
        raise WireError(f"a frame is not JSON: {str(exc)[:100]}") from None


class Channel:
    """Frames over a pair of pipe descriptors, each read bounded by size and a deadline."""

    def __init__(self, read_fd, write_fd):
        self.read_fd, self.write_fd = read_fd, write_fd

    def send(self, message):
        data = dumps(message)
        if len(data) > MAX_FRAME_BYTES:
            raise WireError(f"a message of {len(data)} bytes is over the {MAX_FRAME_BYTES}-byte limit")
        view = memoryview(_LEN.pack(len(data)) + data)
        try:
            while view:
                view = view[os.write(self.write_fd, view) :]
        except OSError as exc:
            raise ChannelClosed(f"the other process is gone ({exc.strerror})") from None

    def receive(self, deadline=None):
        size = _LEN.unpack(self._read_exactly(4, deadline))[0]
        if size > MAX_FRAME_BYTES:
            raise WireError(f"a frame of {size} bytes is over the {MAX_FRAME_BYTES}-byte limit")
        return loads(self._read_exactly(size, deadline))

    def _read_exactly(self, size, deadline):
        chunks, left = [], size
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([self.read_fd], [], [], wait)[0]:
                    raise ChannelTimeout("no answer before the deadline")
            try:
                chunk = os.read(self.read_fd, min(left, 1 << 20))
            except OSError as exc:
                raise ChannelClosed(f"the other process is gone ({exc.strerror})") from None
            if not chunk:
                raise ChannelClosed("the other process closed the channel")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
