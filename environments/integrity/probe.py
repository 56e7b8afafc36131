"""Judge Python solution code by its outputs, compared in a process that never imports it.

    python -I .oracle/probe.py [SPEC]        (SPEC defaults to .oracle/probes.json)

A test that imports agent code and asserts on what it returns shares its process with that code, which
can patch the runner, read the test's own source for the expected value, or return an object equal to
everything. This oracle splits the two. The **judge** (this script, run with ``-I``: no workspace or user
site on its path) reads the spec (``setup`` import lines, ``probes`` as expressions, ``expected`` encoded
outputs), deletes the spec file, makes itself non-dumpable, and starts a **child** Python in the
workspace. The child receives only the setup and the expressions (never an expected value; the hidden
files it could read are gone), evaluates each, and writes a typed encoding of every result to a pipe.
The judge compares those encodings with the expected ones: exact types (a ``str`` subclass, a truthy
non-bool, an object with a lying ``__eq__`` never match; ``int`` and ``float`` compare as numbers, floats
within a relative 1e-9), containers element by element, exceptions by class name in the raised type's MRO.
Exit status 0 iff every probe matched; one line per mismatch names the probe, never the expected value.

The same file is imported by the task generator to compute ``expected`` from the reference solution
(``evaluate`` in-process, ``encode`` the same way). Standard library only, Python 3.8+.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import fractions
import json
import math
import os
import subprocess
import sys

MAX_DEPTH = 20
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
CHILD_TIMEOUT_S = 45.0
_SCALARS = {str: "str", bytes: "bytes", bool: "bool", type(None): "none"}


def encode(value, depth=0):
    """A JSON-able, typed description of ``value`` that runs no code of ``value``'s class (exact types
    only; anything else is described by its type name and never matches a reference value)."""
    if depth > MAX_DEPTH:
        return {"t": "too_deep"}
    kind = type(value)
    if kind in _SCALARS:
        data = value.hex() if kind is bytes else value
        return {"t": _SCALARS[kind], "v": data}
    if kind is int:
        return {"t": "num", "v": value}
    if kind is float:
        return {"t": "num", "v": value if math.isfinite(value) else repr(value)}
    if kind in (list, tuple):
        return {"t": kind.__name__, "v": [encode(v, depth + 1) for v in value]}
    if kind in (set, frozenset):
        items = sorted((encode(v, depth + 1) for v in value), key=_canonical)
        return {"t": kind.__name__, "v": items}
    if kind is dict:
        pairs = [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]
        return {"t": "dict", "v": sorted(pairs, key=lambda kv: _canonical(kv[0]))}
    if kind is decimal.Decimal:
        return {"t": "decimal", "v": str(value)}
    if kind is fractions.Fraction:
        return {"t": "fraction", "v": [value.numerator, value.denominator]}
    if kind in (datetime.date, datetime.datetime, datetime.time):
        return {"t": kind.__name__, "v": value.isoformat()}
    if kind is datetime.timedelta:
        return {"t": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind is complex:
        return {"t": "complex", "v": [repr(value.real), repr(value.imag)]}
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return {
            "t": "namedtuple",
            "name": kind.__name__,
            "v": [encode(v, depth + 1) for v in tuple.__iter__(value)],
        }
    if dataclasses.is_dataclass(kind):
        fields = [[f.name, encode(getattr(value, f.name), depth + 1)] for f in dataclasses.fields(kind)]
        return {"t": "dataclass", "name": kind.__name__, "v": fields}
    return {"t": "other", "name": getattr(kind, "__qualname__", "?")}


def _canonical(encoded):
    return json.dumps(encoded, sort_keys=True)


def evaluate(setup, exprs):
    """Run the ``setup`` lines, then evaluate each expression; return one encoding per expression
    (``raised`` with the exception's MRO names when it raised). Runs agent code: the child's job."""
    namespace = {"__name__": "__probe__"}
    try:
        exec("\n".join(setup), namespace)  # noqa: S102 - the task's own import lines
    except BaseException as exc:  # noqa: BLE001 - a broken import is every probe's outcome
        failed = {"t": "setup_failed", "types": [c.__name__ for c in type(exc).__mro__]}
        return [failed for _ in exprs]
    outputs = []
    for expr in exprs:
        try:
            value = eval(expr, namespace)  # noqa: S307 - the task's own probe expressions
        except BaseException as exc:  # noqa: BLE001 - raising is an outcome too
            outputs.append({"t": "raised", "types": [c.__name__ for c in type(exc).__mro__]})
            continue
        try:
            outputs.append(encode(value))
        except BaseException:  # noqa: BLE001
            outputs.append({"t": "unencodable"})
    return outputs


def same(got, want):
    """Whether ``got`` (the child's encoding) matches ``want`` (the reference's)."""
    if not isinstance(got, dict) or not isinstance(want, dict):
        return False
    kind = want.get("t")
    if kind == "raised":
        return got.get("t") == "raised" and want["types"][0] in (got.get("types") or [])
    if got.get("t") != kind:
        return False
    if kind == "num":
        a, b = got.get("v"), want.get("v")
        if isinstance(a, str) or isinstance(b, str):
            return a == b
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            return False
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if kind in ("list", "tuple", "set", "frozenset", "namedtuple", "dict", "dataclass"):
        if got.get("name") != want.get("name"):
            return False
        a, b = got.get("v"), want.get("v")
        if not isinstance(a, list) or len(a) != len(b):
            return False
        if kind == "dict":
            return all(same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a, b))  # noqa: B905
        if kind == "dataclass":
            return all(fa[0] == fb[0] and same(fa[1], fb[1]) for fa, fb in zip(a, b))  # noqa: B905
        return all(same(x, y) for x, y in zip(a, b))  # noqa: B905
    if kind == "other":
        return False
    return got == want


_CHILD = (
    "import json, os, sys\n"
    "payload = json.loads(sys.stdin.read())\n"
    "ns = {'__name__': '__probe_driver__'}\n"
    "exec(payload['driver'], ns)\n"
    "out = json.dumps(ns['evaluate'](payload['setup'], payload['exprs'])).encode()\n"
    "fd = int(sys.argv[1])\n"
    "while out:\n"
    "    out = out[os.write(fd, out):]\n"
    "os.close(fd)\n"
)


def _no_dumps():
    """Make this process non-dumpable, so the child (same uid) cannot read its memory via /proc."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001 - best effort: not every libc exposes prctl
        pass


def _run_child(setup, exprs, driver):
    read_fd, write_fd = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(write_fd)],
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
        start_new_session=True,
    )
    os.close(write_fd)
    try:
        child.stdin.write(json.dumps({"driver": driver, "setup": setup, "exprs": exprs}).encode())
        child.stdin.close()
    except BrokenPipeError:
        pass
    chunks, total = [], 0
    with os.fdopen(read_fd, "rb") as pipe:
        while chunk := pipe.read(65536):
            total += len(chunk)
            if total > MAX_OUTPUT_BYTES:
                break
            chunks.append(chunk)
    try:
        child.wait(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        child.wait()
    try:
        os.killpg(child.pid, 9)
    except OSError:
        pass
    try:
        outputs = json.loads(b"".join(chunks))
    except ValueError:
        return None
    return outputs if isinstance(outputs, list) and len(outputs) == len(exprs) else None


def judge(spec_path):
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    os.unlink(spec_path)
    with open(os.path.abspath(__file__), encoding="utf-8") as handle:
        driver = handle.read()
    _no_dumps()
    probes = spec["probes"]
    outputs = _run_child(spec["setup"], [p["expr"] for p in probes], driver)
    if outputs is None:
        print("probe: the solution's process gave no complete output (it crashed, exited or hung)")
        return 1
    failed = [p for p, got in zip(probes, outputs) if not same(got, p["expected"])]  # noqa: B905
    for probe in failed[:10]:
        print(f"probe {probe['id']}: {probe['expr'][:120]} gave a different result")
    print(f"probe: {len(probes) - len(failed)} of {len(probes)} outputs match the reference")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(judge(sys.argv[1] if len(sys.argv) > 1 else os.path.join(".oracle", "probes.json")))
