"""Whether an edit to a shared project file touches the part a test runner reads.

``pyproject.toml``, ``setup.cfg`` and ``package.json`` hold runner configuration next to package
metadata. Bumping a version, adding a description or declaring a dependency is ordinary work; changing the
pytest tables, the ``[tool:pytest]`` section, or ``package.json``'s scripts, module type, entry points or
test-runner keys is not. The verifier always uses the pristine file whatever this says; the audit uses it
to flag only edits of the runner's part. A file that no longer parses counts as a runner change.

The files are the agent's, read on the host, so the reading is bounded: a file over ``MAX_CONFIG_BYTES``,
a ``setup.cfg`` line over ``MAX_CFG_LINE`` (configparser's option pattern is quadratic in a line's inner
whitespace), nesting too deep for the parsers (``RecursionError``) or any other error counts as a runner
change (flagged), never an exception.
"""

from __future__ import annotations

import configparser
import json
import tomllib

PACKAGE_JSON_METADATA = frozenset(
    {
        "name",
        "version",
        "description",
        "keywords",
        "author",
        "contributors",
        "license",
        "repository",
        "homepage",
        "bugs",
        "engines",
        "private",
        "files",
        "publishConfig",
        "funding",
    }
)
"""``package.json`` keys no runner reads; a change to any other key is a runner change."""
MAX_CONFIG_BYTES = 256 * 1024
"""A shared project file larger than this is not parsed: it counts as a runner change."""
MAX_CFG_LINE = 512
"""The longest ``setup.cfg`` line parsed (real ones are far shorter; continuation lines are separate)."""


def _pytest_tables(data: dict) -> object:
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    return {k: v for k, v in tool.items() if k.startswith("pytest")}


def runner_part_changed(path: str, before: bytes, after: bytes) -> bool:
    """Whether ``after`` differs from ``before`` in what a runner reads (see the module docstring); any
    other file name counts as entirely runner configuration."""
    name = path.rsplit("/", 1)[-1]
    if max(len(before), len(after)) > MAX_CONFIG_BYTES:
        return True
    try:
        if name == "pyproject.toml":
            return _pytest_tables(tomllib.loads(before.decode())) != _pytest_tables(
                tomllib.loads(after.decode())
            )
        if name == "package.json":
            old, new = json.loads(before), json.loads(after)
            if not isinstance(new, dict) or not isinstance(old, dict):
                return True
            keys = (set(old) | set(new)) - PACKAGE_JSON_METADATA
            return any(old.get(k) != new.get(k) for k in keys)
        if name == "setup.cfg":
            if any(len(line) > MAX_CFG_LINE for line in (before + b"\n" + after).splitlines()):
                return True
            return _cfg_sections(before) != _cfg_sections(after)
    except Exception:  # unparsable, too deep (RecursionError) or anything else: count it as changed
        return True
    return True


def _cfg_sections(data: bytes) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(data.decode())
    return {
        s: dict(parser[s]) for s in parser.sections() if "pytest" in s or s.startswith(("tool:", "coverage"))
    }
