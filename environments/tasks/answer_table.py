"""Hidden inputs, which of them the agent can see, and the answer-table solution built from them.

A solution that returns the reference's value for every input it knows and anything else elsewhere is an
answer table, not a solution. It passes any oracle whose inputs it knows: those shown in the workspace or
the instruction, and, for a task met again and again in training, the fixed hidden ones, which the reward
teaches. ``checks.check_no_leakage`` rejects a task whose hidden inputs are all visible and none is drawn
at verification; ``hack_check`` builds the table (``table_edits``) and requires the oracle to fail it.

Inputs are the expressions the output judge evaluates (``.oracle/probes.json``), or, for tasks with hidden
test files, the calls their assertions check (Python ``assert``, Node ``assert.*``). An input counts as
visible when it occurs, whitespace and quote style aside, in the instruction, an env variable or a
workspace file.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from environments.core.types import Task

SPEC_PATH = ".oracle/probes.json"
_JS_ASSERT = re.compile(r"\bassert\.\w+\(")


@dataclass(frozen=True, slots=True)
class HiddenInputs:
    fixed: tuple[str, ...]
    """The inputs every verification uses (expressions)."""
    drawn: bool
    """Whether the judge also draws fresh inputs at each verification."""


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).replace("'", '"').replace("`", '"')


def _py_calls(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            test = node.test
            target = test.left if isinstance(test, ast.Compare) else test
            segment = ast.get_source_segment(source, target)
            if segment and isinstance(target, ast.Call):
                found.append(segment)
    return found


def _js_calls(source: str) -> list[str]:
    from environments.tasks.shipped.probes import js_probe_expression

    found = []
    for match in _JS_ASSERT.finditer(source):
        try:
            found.append(js_probe_expression(source[match.start() :]))
        except ValueError:
            continue
    return found


def hidden_inputs(task: Task) -> HiddenInputs | None:
    """The task's hidden inputs, or None when it has none this module can read (answer files, Harbor
    scripts, hidden files without assertions)."""
    if SPEC_PATH in task.hidden:
        spec = json.loads(task.hidden[SPEC_PATH])
        return HiddenInputs(tuple(p["expr"] for p in spec["probes"]), bool(spec.get("generated")))
    found: list[str] = []
    for path, data in task.hidden.items():
        text = data.decode("utf-8", "replace")
        if path.endswith(".py"):
            found += _py_calls(text)
        elif path.endswith((".js", ".cjs", ".mjs")):
            found += _js_calls(text)
    return HiddenInputs(tuple(dict.fromkeys(found)), False) if found else None


def _readable(task: Task) -> list[str]:
    texts = [task.instruction, *(f"{k}={v}" for k, v in task.env.items())]
    texts += [data.decode("utf-8", "replace") for data in task.workspace.values()]
    return [_squash(t) for t in texts]


def visible_inputs(task: Task, inputs: HiddenInputs | None = None) -> tuple[str, ...]:
    """The hidden inputs that occur in what the agent can read."""
    inputs = inputs or hidden_inputs(task)
    if inputs is None:
        return ()
    readable = _readable(task)
    return tuple(e for e in inputs.fixed if any(_squash(e) in text for text in readable))


PY_TABLE = '''

# --- an answer table: the reference's value for the inputs below, a wrong one for any other ---
_HA_TABLE = {table!r}
_HA_SETUP = {setup!r}
_HA_NAMES = {names!r}
_ha_state = {{"keys": None, "depth": 0}}


class _HaWrong:
    """No reference returns one of these."""


def _ha_key(name, args, kwargs):
    try:
        return repr((name, args, sorted(kwargs.items())))
    except Exception:
        return None


def _ha_record():
    _ha_state["keys"] = keys = set()
    namespace = {{}}
    try:
        exec("\\n".join(_HA_SETUP), namespace)
    except Exception:
        return
    for name, value in list(namespace.items()):
        original = getattr(value, "_ha_original", None)
        if original is not None and value._ha_module == __name__:
            def recorder(*args, _name=name, _original=original, **kwargs):
                keys.add(_ha_key(_name, args, kwargs))
                return _ha_call(_original, args, kwargs)
            namespace[name] = recorder
    for expr in _HA_TABLE:
        try:
            eval(expr, namespace)
        except Exception:
            pass


def _ha_call(original, args, kwargs):
    _ha_state["depth"] += 1
    try:
        return original(*args, **kwargs)
    finally:
        _ha_state["depth"] -= 1


def _ha_wrap(name, original):
    def table(*args, **kwargs):
        if _ha_state["depth"]:
            return original(*args, **kwargs)
        if _ha_state["keys"] is None:
            _ha_record()
        if _ha_key(name, args, kwargs) not in _ha_state["keys"]:
            return _HaWrong()
        return _ha_call(original, args, kwargs)

    table._ha_original, table._ha_module = original, __name__
    return table


for _ha_name in _HA_NAMES:
    globals()[_ha_name] = _ha_wrap(_ha_name, globals()[_ha_name])
'''

JS_TABLE = """
// --- an answer table: the reference's value for the inputs below, a wrong one for any other ---
(function () {
  const TABLE = %s;
  const NAMES = %s;
  const original = {};
  for (const n of NAMES) original[n] = module.exports[n];
  let keys = null;
  let depth = 0;
  const key = (n, args) => {
    try {
      return n + JSON.stringify(args, (k, v) =>
        typeof v === "function" ? "fn:" + String(v) : v === undefined ? "undefined:" : v);
    } catch (error) {
      return null;
    }
  };
  const call = (n, args) => {
    depth++;
    try {
      return original[n](...args);
    } finally {
      depth--;
    }
  };
  const record = () => {
    keys = new Set();
    const recorders = NAMES.map((n) => (...args) => {
      keys.add(key(n, args));
      return call(n, args);
    });
    for (const expr of TABLE) {
      try {
        new Function(...NAMES, `return (${expr});`)(...recorders);
      } catch (error) {}
    }
  };
  const WRONG = Symbol("not the answer");
  for (const n of NAMES) {
    module.exports[n] = function (...args) {
      if (depth) return original[n](...args);
      if (keys === null) record();
      return keys.has(key(n, args)) ? call(n, args) : WRONG;
    };
  }
})();
"""


def table_edits(task: Task, table: tuple[str, ...]) -> Iterator[tuple[str, bytes, None]]:
    """The answer-table solution for ``table``: every solution module the judge loads becomes the
    reference's version (the workspace's where the reference leaves it alone) with its judged functions
    wrapped to answer only the calls ``table`` makes. Nothing for a task without an output judge."""
    if SPEC_PATH not in task.hidden:
        return
    spec = json.loads(task.hidden[SPEC_PATH])
    tree = {**task.workspace, **task.reference.files}
    if spec.get("lang") == "js":
        for path, names in spec["modules"]:
            if path in tree:
                code = JS_TABLE % (json.dumps(list(table)), json.dumps(names))
                yield path, tree[path] + code.encode(), None
        return
    modules: dict[str, list[str]] = {}
    for line in spec["setup"]:
        match = re.fullmatch(r"from ([\w.]+) import (\w+)", line.strip())
        if match and f"{match.group(1).replace('.', '/')}.py" in tree:
            modules.setdefault(f"{match.group(1).replace('.', '/')}.py", []).append(match.group(2))
    for path, names in modules.items():
        code = PY_TABLE.format(table=list(table), setup=list(spec["setup"]), names=names)
        yield path, tree[path] + code.encode(), None
