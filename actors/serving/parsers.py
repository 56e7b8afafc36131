"""The tool-call parser names the installed vLLM accepts, known before anything starts.

A preset's ``tool_call_parser`` reaches vLLM only as ``--tool-call-parser`` when the server starts, after
Ray, the model build and the placement; a misspelt name failed there, minutes in. The names are read from
the installed vLLM's own source (its registration table in ``tool_parsers/__init__.py``, or the
``register_module("name")`` calls of older versions) with ``ast``: importing vLLM takes seconds and torch.
Where vLLM is not installed (a laptop that only checks configs) or the table is not found, nothing is
checked. A ``--tool-parser-plugin`` in ``extra_args`` can register any name, so then nothing is checked
either. The check is against this machine's vLLM; a cluster whose nodes run another version may differ.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path

PLUGIN_FLAG = "--tool-parser-plugin"
# Where vLLM keeps its parsers: vllm/tool_parsers (0.12 on), vllm/entrypoints/openai/tool_parsers before.
PARSER_DIRS = ("tool_parsers", "entrypoints/openai/tool_parsers")
REGISTRY_TABLE = "_TOOL_PARSERS_TO_REGISTER"
REGISTER_CALLS = ("register_module", "register_lazy_module")


@functools.cache
def known_tool_parsers() -> frozenset[str] | None:
    """The parser names of the vLLM installed here, or None when that cannot be read (then unchecked)."""
    spec = importlib.util.find_spec("vllm")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    for folder in (root / d for d in PARSER_DIRS):
        names = parser_names(folder)
        if names:
            return frozenset(names)
    return None


def parser_names(folder: Path) -> set[str]:
    """The names registered under ``folder``: the keys of the registration table, and the string
    arguments of ``register_module``/``register_lazy_module`` calls (``name=`` or first argument)."""
    names: set[str] = set()
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else ():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == REGISTRY_TABLE for t in targets):
                    names.update(k.value for k in node.value.keys if _is_text(k))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in REGISTER_CALLS:
                given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "name")]
                for value in given:
                    items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
                    names.update(item.value for item in items if _is_text(item))
    return names


def _is_text(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def tool_parser_problem(
    name: str, extra_args: Sequence[str] = (), known: frozenset[str] | None = None
) -> str | None:
    """Why ``--tool-call-parser name`` would stop vLLM at start (one line naming the fix), else None.
    ``known``: the accepted names (default: the installed vLLM's; None there means unchecked)."""
    if any(arg.split("=", 1)[0] == PLUGIN_FLAG for arg in extra_args):
        return None  # a plugin registers names of its own
    known = known_tool_parsers() if known is None else known
    if known is None or name in known:
        return None
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.7)
    hint = f"did you mean {', '.join(close)}?" if close else f"choose one of {', '.join(sorted(known))}"
    return f"tool_call_parser={name!r}: the installed vLLM has no such tool-call parser; {hint}"
