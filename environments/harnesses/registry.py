"""The harnesses this project trains in, by name: one ``HarnessSpec`` per harness, the only list of them.

A harness is one module (``environments/harnesses/<name>.py``) holding its launcher (config writer and
headless run), its person's-config writer (``jobs.use``), its demonstration renderer and message shape
(``environments.demos``), the reader of its tool calls (``environments.tasks.sessions``) and the role of
each tool name it may offer (``TOOL_ROLES``, which the guard's normalizer reads through ``tool_roles()``);
the tools it declares are the captured request in ``environments/harness_prompts/<name>.json``; its
session logs are read by the ``environments.traces.read`` formats it names. Configs, rollouts,
demonstrations, the guard and ``jobs.use`` look a harness up here, so adding one is: write its module,
capture its request, and register it, either in ``BUILTIN`` below or from another package through the
``harness_adapters.harnesses`` entry point (a ``HarnessSpec``); docs/harnesses.md has the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from environments.harnesses import hermes, opencode, pi
from environments.harnesses.base import HarnessLauncher, LaunchSpec
from environments.harnesses.tools import OTHER_AGENTS, ToolRole

ENTRY_POINTS = "harness_adapters.harnesses"

Rendered = list[tuple[str, dict[str, Any], str]]
"""(tool name, arguments, tool result) of each call one demonstration step becomes."""


@dataclass(frozen=True, slots=True)
class HarnessSpec:
    name: str
    launcher: Callable[[], HarnessLauncher]
    """Makes the launcher: writes the harness's config into an isolated home and runs it headless."""
    personal_config: Callable[[Path, Mapping[str, str], LaunchSpec], dict[Path, str]]
    """(home, environment, endpoint) -> the new content of each file of a person's own config."""
    render_step: Callable[[Any], Rendered]
    """A step (``environments.harnesses.steps``) as the harness's tool calls and results."""
    user_message: Callable[[str], dict[str, Any]]
    """The instruction as the harness sends it."""
    parse_call: Callable[[str, dict[str, Any], Any], Any] = lambda name, args, result=None: None
    """A recorded session's tool call (name, arguments, its tool result) back to a step
    (``render_step``'s inverse, a read's text taken from the result; ``environments.tasks.sessions``);
    None for calls that neither touch files nor run commands."""
    session_formats: tuple[str, ...] = ()
    """``environments.traces.read.TraceFormat`` values of its session logs."""
    calling_content: str | None = ""
    """The ``content`` of an assistant message that only calls tools (pi sends none: None)."""
    names_tool_results: bool = False
    """Whether a tool result message carries the tool's ``name`` (hermes)."""
    tool_roles: Mapping[str, ToolRole] = field(default_factory=dict)
    """Every tool the harness may offer, by name, and its role (``environments.harnesses.tools``): the
    guard reads a call's arguments by its role (``tool_roles()``)."""


BUILTIN = (
    HarnessSpec(
        "pi",
        pi.PiLauncher,
        pi.personal_config,
        pi.render_step,
        pi.user_message,
        pi.parse_call,
        ("pi-session", "pi-events"),
        calling_content=None,
        tool_roles=pi.TOOL_ROLES,
    ),
    HarnessSpec(
        "opencode",
        opencode.OpencodeLauncher,
        opencode.personal_config,
        opencode.render_step,
        opencode.user_message,
        opencode.parse_call,
        ("opencode-export", "opencode-events"),
        tool_roles=opencode.TOOL_ROLES,
    ),
    HarnessSpec(
        "hermes",
        hermes.HermesLauncher,
        hermes.personal_config,
        hermes.render_step,
        hermes.user_message,
        hermes.parse_call,
        ("hermes-export",),
        names_tool_results=True,
        tool_roles=hermes.TOOL_ROLES,
    ),
)


@cache
def registry() -> dict[str, HarnessSpec]:
    """Every registered harness: the built-in ones, then those other packages register."""
    from importlib.metadata import entry_points

    found = {spec.name: spec for spec in BUILTIN}
    for point in entry_points(group=ENTRY_POINTS):
        spec = point.load()
        if not isinstance(spec, HarnessSpec):
            raise TypeError(f"entry point {point.name} ({ENTRY_POINTS}) must be a HarnessSpec, got {spec!r}")
        found[spec.name] = spec
    merged_roles(found.values())  # two harnesses giving one name two roles: fail here, not in the guard
    return found


def harness_names() -> tuple[str, ...]:
    return tuple(registry())


def harness_spec(name: str) -> HarnessSpec:
    """The harness ``name``; an error lists the registered ones."""
    spec = registry().get(name)
    if spec is None:
        raise ValueError(f"harness={name!r}: choose one of {', '.join(harness_names())}")
    return spec


def harness_problem(names: tuple[str, ...] | list[str]) -> str | None:
    """What is wrong with a config's list of harnesses (empty, or naming one not registered), or None."""
    unknown = [n for n in names if n not in registry()]
    if not names or unknown:
        return f"harnesses={list(names)}: choose from {', '.join(harness_names())}"
    return None


def merged_roles(specs: Iterable[HarnessSpec]) -> dict[str, ToolRole]:
    """The role of each tool name (lower-cased) that ``specs`` or ``OTHER_AGENTS`` declare; an error
    names a tool given two roles."""
    merged = {name.lower(): role for name, role in OTHER_AGENTS.items()}
    for spec in specs:
        for name, role in spec.tool_roles.items():
            if merged.setdefault(name.lower(), role) is not role:
                raise ValueError(
                    f"harness {spec.name!r}: tool {name!r} is {role.value} here and "
                    f"{merged[name.lower()].value} in another harness; give it one role"
                )
    return merged


_roles_of: list[Any] = [None, {}]
"""(the ``registry()`` dict, its ``merged_roles``): recomputed when the registry is rebuilt."""


def tool_roles() -> Mapping[str, ToolRole]:
    """The role of every tool name (lower-cased) a registered harness declares, and of ``OTHER_AGENTS``:
    the guard's normalizer (``serve.normalize``) reads each call by it."""
    specs = registry()
    if _roles_of[0] is not specs:
        _roles_of[:] = [specs, merged_roles(specs.values())]
    return _roles_of[1]
