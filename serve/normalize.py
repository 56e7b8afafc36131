"""One shape for the tool calls of pi, opencode and hermes.

The three harnesses name the same actions differently (their captured requests:
`environments/harness_prompts/<harness>.json`):

| action | pi | opencode | hermes |
|---|---|---|---|
| shell | `bash{command}` | `bash{command}` | `terminal{command}` |
| read | `read{path}` | `read{filePath}` | `read_file{path}` |
| write | `write{path,content}` | `write{filePath,content}` | `write_file{path,content}` |
| edit |`edit{path,edits[{oldText,newText}]}` | `edit{filePath,oldString,newString}` | `patch{mode:replace}` |
| patch | - | `apply_patch{patchText}` | `patch{mode:"patch",patch}` (V4A envelope) |
| search | `grep`/`find`/`ls` | `glob`/`grep` | `search_files{pattern,target,path}` |
| web | - | `webfetch{url}`, `websearch{query}` | `web_search{query}`, `web_extract{urls}` |
| code | - | - | `execute_code{code}` |

`normalize(name, arguments)` maps a call onto `NormalCall`, whose fields say what the call
reads, writes, deletes, runs and fetches. A tool's role (which arguments to read) is the one the
harness registry declares (`environments.harnesses.registry.tool_roles()`: each registered
harness's `TOOL_ROLES`, and names other agents use); any other name becomes `ToolKind.OTHER`
with its URL-like arguments kept, so rules can still judge it. Arguments that are not a JSON
object give `understood=False`: rules treat that as unknown (the declared-tools rule blocks it
first).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from environments.harnesses.registry import tool_roles
from environments.harnesses.tools import ToolRole

from . import rx


class ToolKind(StrEnum):
    SHELL = "shell"
    CODE = "code"
    READ = "read"
    WRITE = "write"
    EDIT = "edit"
    SEARCH = "search"
    FETCH = "fetch"
    WEB_SEARCH = "web_search"
    INERT = "inert"
    OTHER = "other"


PATH_KEYS = ("path", "filePath", "file_path", "filename")
WORKDIR_KEYS = ("workdir", "cwd", "working_directory", "dir", "directory")
SESSION_STORE = "~/.hermes/sessions"
URL_KEYS = ("url", "urls", "uri", "href", "link")
URL_VALUE = rx.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")

V4A_HEADER = rx.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): *(\S.*?)\s*$")


@dataclass(frozen=True, slots=True)
class Edit:
    """One in-place change: `old` text replaced by `new` in `path`."""

    path: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class NormalCall:
    name: str
    kind: ToolKind
    understood: bool = True
    command: str | None = None  # shell text
    code: str | None = None  # program text run by a code tool
    reads: tuple[str, ...] = ()
    writes: tuple[tuple[str, str], ...] = ()  # (path, whole new content)
    edits: tuple[Edit, ...] = ()
    deletes: tuple[str, ...] = ()
    search: tuple[tuple[str, str], ...] = ()  # (pattern, path or "")
    urls: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    orders: str = ""
    """What a sub-agent is told to do (``task``, ``delegate_task``): judged for the lookups it asks for."""
    ran: bool = False
    """The content of a file an earlier call wrote, run by this one (``rules.runs``); a host it reaches
    through its arguments (not named in its text) is judged in the call that runs it."""

    @property
    def written_text(self) -> tuple[str, ...]:
        """Text the call puts into files (whole contents and the new side of edits)."""
        return tuple(c for _, c in self.writes) + tuple(e.new for e in self.edits)

    @property
    def touched_paths(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.writes) + tuple(e.path for e in self.edits) + self.deletes


def _str(args: Mapping[str, object], *keys: str) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _urls(args: Mapping[str, object]) -> tuple[str, ...]:
    out: list[str] = []
    for key in URL_KEYS:
        value = args.get(key)
        values = value if isinstance(value, list | tuple) else [value]
        out += [v for v in values if isinstance(v, str)]
    return tuple(out)


def parse_v4a(text: str) -> tuple[tuple[tuple[str, str], ...], tuple[Edit, ...], tuple[str, ...]]:
    """(added files, edits, deleted files) of a V4A `*** Begin Patch` envelope.

    An update's removed lines (`-`) and context form `old`, its added lines (`+`) and context
    form `new`, so "is this edit a pure insertion" can be asked of it like any other edit.
    """
    adds: list[tuple[str, str]] = []
    edits: list[Edit] = []
    deletes: list[str] = []
    action, path, old, new = "", "", [], []

    def flush() -> None:
        if action == "Add File":
            adds.append((path, "\n".join(new)))
        elif action == "Update File":
            edits.append(Edit(path, "\n".join(old), "\n".join(new)))

    for line in text.splitlines():
        header = V4A_HEADER.match(line)
        if header:
            if header[1] == "Move to":
                deletes.append(path)
                path = header[2]
                continue
            flush()
            action, path, old, new = header[1], header[2], [], []
            if action == "Delete File":
                deletes.append(path)
            continue
        if line.startswith(("*** Begin Patch", "*** End Patch", "*** End of File", "@@")):
            continue
        if action == "Add File":
            new.append(line[1:] if line.startswith("+") else line)
        elif action == "Update File":
            if line.startswith("-"):
                old.append(line[1:])
            elif line.startswith("+"):
                new.append(line[1:])
            else:
                old.append(line[1:])
                new.append(line[1:])
    flush()
    return tuple(adds), tuple(edits), tuple(deletes)


def _edit_call(name: str, args: Mapping[str, object]) -> NormalCall:
    patch = _str(args, "patch", "patchText", "input")
    if patch is not None and (args.get("mode") in (None, "patch") or name == "apply_patch"):
        adds, edits, deletes = parse_v4a(patch)
        return NormalCall(name, ToolKind.EDIT, writes=adds, edits=edits, deletes=deletes)
    path = _str(args, *PATH_KEYS)
    if path is None:
        return NormalCall(name, ToolKind.EDIT, understood=False)
    raw = args.get("edits")
    if isinstance(raw, list | tuple):
        edits: list[Edit] = []
        for item in raw:
            if not isinstance(item, Mapping):
                return NormalCall(name, ToolKind.EDIT, understood=False)
            old, new = _str(item, "oldText", "old_string"), _str(item, "newText", "new_string")
            if old is None or new is None:
                return NormalCall(name, ToolKind.EDIT, understood=False)
            edits.append(Edit(path, old, new))
        return NormalCall(name, ToolKind.EDIT, edits=tuple(edits))
    old = _str(args, "oldString", "old_string", "oldText", "old_str")
    new = _str(args, "newString", "new_string", "newText", "new_str")
    if old is None or new is None:
        return NormalCall(name, ToolKind.EDIT, understood=False)
    return NormalCall(name, ToolKind.EDIT, edits=(Edit(path, old, new),))


def _search_call(name: str, args: Mapping[str, object]) -> NormalCall:
    pattern = _str(args, "pattern", "query", "glob") or ""
    path = _str(args, "path", "cwd", "directory", "workdir", "root") or ""
    include = _str(args, "include")
    found = [(pattern, path)] + ([(include, path)] if include else [])
    return NormalCall(name, ToolKind.SEARCH, search=tuple(found))


def normalize(name: str, arguments: object) -> NormalCall:
    """The harness-neutral form of one call; `understood=False` when arguments aren't an object
    or lack what the tool needs."""
    if not isinstance(arguments, Mapping):
        return NormalCall(name, ToolKind.OTHER, understood=False)
    args: Mapping[str, object] = arguments
    key = name.lower()
    role = tool_roles().get(key)
    if role is ToolRole.SHELL:
        command = _str(args, "command", "cmd")
        workdir = _str(args, *WORKDIR_KEYS)
        if command is not None and workdir:  # runs in that folder: read it as `cd DIR && …`
            command = f"cd {shlex.quote(workdir)} && {command}"
        return NormalCall(name, ToolKind.SHELL, command is not None, command=command)
    if role is ToolRole.SHELL_INPUT:  # hermes: `write`/`submit` send text to a running shell's stdin
        data = _str(args, "data", "input")
        if args.get("action") in ("write", "submit") and data:
            return NormalCall(name, ToolKind.SHELL, command=data)
        return NormalCall(name, ToolKind.INERT)
    if role is ToolRole.SESSION_SEARCH:  # the transcripts of other sessions
        query = _str(args, "query") or ""
        return NormalCall(name, ToolKind.SEARCH, search=((query, SESSION_STORE),))
    if role is ToolRole.CODE:
        code = _str(args, "code")
        return NormalCall(name, ToolKind.CODE, code is not None, code=code)
    if role is ToolRole.READ:
        path = _str(args, *PATH_KEYS)
        return NormalCall(name, ToolKind.READ, path is not None, reads=(path,) if path else ())
    if role is ToolRole.WRITE:
        path, content = _str(args, *PATH_KEYS), _str(args, "content", "text")
        ok = path is not None and content is not None
        return NormalCall(name, ToolKind.WRITE, ok, writes=((path, content),) if ok else ())  # type: ignore[arg-type]
    if role is ToolRole.EDIT:
        return _edit_call(key, args)
    if role is ToolRole.SEARCH:
        return _search_call(name, args)
    if role is ToolRole.FETCH:  # every URL in any argument, not only the known keys
        urls = tuple(
            dict.fromkeys(_urls(args) + tuple(m[0] for v in _leaves(args) for m in URL_VALUE.finditer(v)))
        )
        return NormalCall(name, ToolKind.FETCH, bool(urls), urls=urls)
    if role is ToolRole.WEB_SEARCH:
        query = _str(args, "query", "q")
        return NormalCall(name, ToolKind.WEB_SEARCH, query is not None, queries=(query,) if query else ())
    if role is ToolRole.DELEGATE:  # a sub-agent's orders: what it is sent to look for is this call's lookup
        return NormalCall(
            name, ToolKind.INERT, urls=_urls(args), orders=_str(args, "prompt", "goal", "task") or ""
        )
    if role is ToolRole.INERT:
        return NormalCall(name, ToolKind.INERT, urls=_urls(args))
    # Unrecognized: keep every URL found in any string argument, so hosts can still be judged.
    found = [m[0] for v in _leaves(args) for m in URL_VALUE.finditer(v)]
    return NormalCall(name, ToolKind.OTHER, urls=tuple(found))


def _leaves(value: object, depth: int = 0) -> list[str]:
    if depth > 16:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _leaves(v, depth + 1)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _leaves(v, depth + 1)]
    return []
