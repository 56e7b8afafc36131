"""Judge solution code by its outputs, compared in a process that never loads it.

    python -I .oracle/probe.py [SPEC] [--seed N]        (SPEC defaults to .oracle/probes.json)

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

**Fresh inputs.** A fixed set of inputs can be beaten by an answer table, and a policy that meets the
same task again can learn one from the reward. A spec with ``generated`` (a generator's source, run here)
makes the judge draw more inputs at every run from a seed it picks (or ``--seed N``, to reproduce a run;
the seed is printed, and is in the last line), and compute their expected outputs from ``reference`` (the
reference modules' source, executed in this process, never in the child) before the child starts.

**Node** (``"lang": "js"``): the child is ``node -e`` with ``probe_child.cjs`` (read from beside the spec,
deleted like it), which requires the workspace's modules and writes typed encodings (own data properties
of plain objects and arrays only) to a pipe. The expected outputs of every probe come from a first Node
child that compiles the reference from the spec's text and also runs each probe's ``check`` (the task's
own assert statement), so a probe is never laxer than its test; the child with the agent's code starts
only after that one has exited.

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
import random
import select
import shutil
import subprocess
import sys
import time
import types

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
    if kind == "object":  # a plain JavaScript object: sorted [key, value] pairs
        a, b = got.get("v"), want.get("v")
        if not isinstance(a, list) or len(a) != len(b):
            return False
        return all(
            isinstance(pa, list) and len(pa) == 2 and pa[0] == pb[0] and same(pa[1], pb[1])
            for pa, pb in zip(a, b)  # noqa: B905
        )
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


def _collect(argv, payload):
    """Run ``argv`` (plus the write end of a pipe's number) with ``payload`` on stdin; return what it
    wrote to the pipe as JSON, or None. Its exit status, stdout and stderr are ignored: only the pipe
    counts, and a crash, an early exit or a hang (``CHILD_TIMEOUT_S``) leaves it incomplete."""
    read_fd, write_fd = os.pipe()
    child = subprocess.Popen(
        [*argv, str(write_fd)], stdin=subprocess.PIPE, pass_fds=(write_fd,), start_new_session=True
    )
    os.close(write_fd)
    try:
        child.stdin.write(json.dumps(payload).encode())
        child.stdin.close()
    except BrokenPipeError:
        pass
    chunks, total = [], 0
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:  # to the deadline at most: a process that keeps the pipe open cannot hold the judge
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                break
            chunk = pipe.read(65536)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_OUTPUT_BYTES:
                break
            chunks.append(chunk)
    try:
        child.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        child.wait()
    try:
        os.killpg(child.pid, 9)
    except OSError:
        pass
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return None


def _run_child(setup, exprs, driver):
    outputs = _collect([sys.executable, "-c", _CHILD], {"driver": driver, "setup": setup, "exprs": exprs})
    return outputs if isinstance(outputs, list) and len(outputs) == len(exprs) else None


def _run_node(payload, driver):
    """A Node child (``probe_child.cjs``) on ``payload``: its ``outputs`` and ``failed_checks``, or None."""
    node = shutil.which("node")
    if node is None:
        return None
    got = _collect([node, "-e", driver], payload)
    if not isinstance(got, dict):
        return None
    outputs = got.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(payload["exprs"]):
        return None
    return got


def draw(generated, seed):
    """The expressions ``generated`` (a generator's ``source``, its function ``call``, ``feature``,
    ``count`` draws) gives for ``seed``, duplicates dropped. Runs only our own generator code."""
    namespace = {"__name__": "__generator__"}
    exec(compile(generated["source"], "<generator>", "exec", dont_inherit=True), namespace)  # noqa: S102
    make = namespace[generated["call"]]
    rng = random.Random(seed)
    return list(dict.fromkeys(make(rng, bool(generated.get("feature"))) for _ in range(generated["count"])))


def load_reference(modules):
    """Execute the reference modules (dotted name -> source) into ``sys.modules`` of this process, so the
    spec's import lines find them without any file of the workspace. Names already taken are refused."""
    for dotted, source in modules.items():
        parts = dotted.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in sys.modules and not getattr(sys.modules[name], "__reference__", False):
                raise ImportError(f"reference module {name} would replace a module the judge uses")
        for i in range(1, len(parts)):
            name = ".".join(parts[:i])
            if name not in sys.modules:
                package = types.ModuleType(name)
                package.__path__, package.__reference__ = [], True
                sys.modules[name] = package
        module = types.ModuleType(dotted)
        module.__reference__ = True
        sys.modules[dotted] = module
        if len(parts) > 1:
            setattr(sys.modules[".".join(parts[:-1])], parts[-1], module)
        exec(compile(source, f"<reference {dotted}>", "exec", dont_inherit=True), module.__dict__)  # noqa: S102


def _fresh_probes(spec, seed):
    """Probes for the inputs drawn with ``seed``, expected outputs from the Python reference (in-process)."""
    generated = spec.get("generated")
    if not generated:
        return []
    exprs = draw(generated, seed)
    reference = spec["reference"]
    load_reference(reference["modules"])
    expected = evaluate(reference["setup"], exprs)
    return [{"id": f"gen_{i}", "expr": e, "expected": w} for i, (e, w) in enumerate(zip(exprs, expected), 1)]  # noqa: B905


def _read_and_remove(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    os.unlink(path)
    return text


def _report(probes, outputs, seed):
    failed = [p for p, got in zip(probes, outputs) if not same(got, p["expected"])]  # noqa: B905
    for probe in failed[:10]:
        print(f"probe {probe['id']}: {probe['expr'][:120]} gave a different result")
    fresh = sum(p["id"].startswith("gen_") for p in probes)
    print(
        f"probe: {len(probes) - len(failed)} of {len(probes)} outputs match the reference "
        f"({fresh} inputs drawn with seed {seed})"
    )
    return 1 if failed else 0


def _judge_node(spec, spec_path, seed):
    driver = _read_and_remove(os.path.join(os.path.dirname(os.path.abspath(spec_path)), "probe_child.cjs"))
    _no_dumps()
    probes = [dict(p) for p in spec["probes"]]
    if spec.get("generated"):
        probes += [{"id": f"gen_{i}", "expr": e} for i, e in enumerate(draw(spec["generated"], seed), 1)]
    exprs = [p["expr"] for p in probes]
    checks = [[p["id"], p["check"]] for p in probes if p.get("check")]
    reference = _run_node(
        {"modules": spec["modules"], "sources": spec["reference"], "exprs": exprs, "checks": checks}, driver
    )
    if reference is None or reference.get("failed_checks"):
        why = reference and reference.get("failed_checks")
        print(f"probe: the reference could not be judged (failed checks: {why}); seed {seed}")
        return 2
    for probe, want in zip(probes, reference["outputs"]):  # noqa: B905
        probe["expected"] = want
    got = _run_node({"modules": spec["modules"], "exprs": exprs}, driver)
    if got is None:
        print(
            f"probe: the solution's process gave no complete output (it crashed, exited or hung); seed {seed}"
        )
        return 1
    return _report(probes, got["outputs"], seed)


def judge(spec_path, seed=None):
    spec = json.loads(_read_and_remove(spec_path))
    seed = secrets_seed() if seed is None else seed
    print(f"probe: seed {seed} (rerun with --seed {seed})")
    if spec.get("lang") == "js":
        return _judge_node(spec, spec_path, seed)
    with open(os.path.abspath(__file__), encoding="utf-8") as handle:
        driver = handle.read()
    _no_dumps()
    probes = spec["probes"] + _fresh_probes(spec, seed)
    outputs = _run_child(spec["setup"], [p["expr"] for p in probes], driver)
    if outputs is None:
        print(
            f"probe: the solution's process gave no complete output (it crashed, exited or hung); seed {seed}"
        )
        return 1
    return _report(probes, outputs, seed)


def secrets_seed():
    """A fresh seed for this run (never derived from anything the workspace holds)."""
    return int.from_bytes(os.urandom(6), "big")


def main(argv):
    args, seed = list(argv), None
    if "--seed" in args:
        at = args.index("--seed")
        seed = int(args[at + 1])
        del args[at : at + 2]
    return judge(args[0] if args else os.path.join(".oracle", "probes.json"), seed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
