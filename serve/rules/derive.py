"""The calls a call makes by other means: what the rules judge besides the call as written.

One call can run more than its text shows. `derived_calls(call, facts)` returns each thing it
runs or touches indirectly as a `NormalCall` of its own, so every rule judges it exactly as if
the model had written it plainly:

- decoded payloads (`decode.payloads`): judged as a shell command and as program code;
- Python the call runs (`python -c`, heredocs into `python -`, `execute_code`), read from its
  syntax tree (`pycode.python_effects`): files it writes, deletes and reads become a write/
  edit-free `NormalCall` with those paths; commands it passes to `os.system`/`subprocess` become
  shell calls; `exec` of a folded string becomes code; its folded strings (`"http://" + host`)
  become code text, so URL and path patterns see them joined; `os.environ` used whole becomes
  `env`;
- JavaScript the call runs (`node -e`): string concatenations are folded the same way
  (`'te' + 'st.js'`, `['a', 'b'].join('/')`) and `fs` writes/deletes and `child_process` commands
  are read from the folded text;
- `git apply` / `patch` of a patch the call or an earlier call wrote: an edit of every file the
  patch names;
- a script, Makefile target, package script or hook an earlier call wrote, when this call runs it
  (`runs.run_calls`): its content, as a shell command or Python code.

Derivation repeats on derived calls up to `MAX_DEPTH` levels and stops at `MAX_DERIVED` calls.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import rx
from ..normalize import Edit, NormalCall, ToolKind
from .decode import payloads
from .hosts import NET_API
from .pycode import python_effects
from .runs import package_script_writes, run_calls
from .shellread import read_shell
from .shellwords import resolve

if TYPE_CHECKING:
    from .facts import SessionFacts

MAX_DEPTH = 3
MAX_DERIVED = 32
JS_CONCAT = rx.compile(r"""(['"`])([^'"`\n\\]*)\1\s*\+\s*(['"`])([^'"`\n\\]*)\3""")
JS_JOIN = rx.compile(r"""\[\s*((?:(['"])[^'"\n]*\2\s*,?\s*)+)\]\s*\.join\(\s*(['"])([^'"\n]*)\3\s*\)""")
JS_STRING = rx.compile(r"""(['"`])([^'"`\n]*)\1""")
JS_FS = rx.compile(
    r"""\b(writeFileSync|appendFileSync|writeFile|appendFile|createWriteStream|rmSync|unlinkSync|"""
    r"""rmdirSync|rm|unlink|rmdir|renameSync|copyFileSync|cpSync|symlinkSync|readFileSync|readFile|"""
    r"""readdirSync|file_put_contents|unlink|File\.write|IO\.write|File\.delete|FileUtils\.rm_rf|"""
    r"""file_get_contents|File\.read)\(\s*(['"`])([^'"`\n]*)\2"""
)
JS_TWO = rx.compile(
    r"""\b(?:renameSync|rename|copyFileSync|copyFile|cpSync|symlinkSync)\(\s*(['"`])[^'"`\n]*\1\s*,\s*"""
    r"""(['"`])([^'"`\n]*)\2"""
)
"""Two-path calls: the second path is the one written (a copy's source is only read)."""
COPIES = ("copyFile", "cpSync", "symlink")
JS_EXEC = rx.compile(r"""\b(?:execSync|exec|spawnSync|spawn|execFileSync)\(\s*(['"`])([^'"`\n]*)\1""")
DIFF_TARGET = rx.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)|^\*\*\* (?:Update|Add|Delete) File: *(\S+)", rx.M)
PATCHERS = frozenset({"patch", "git"})


JS_CONST = rx.compile(r"""\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(['"`])([^'"`\n]*)\2\s*[;\n]""")


def fold_js(code: str) -> str:
    """`code` with string concatenations, literal joins and names bound once to a literal
    folded into single literals."""
    for _ in range(8):
        for m in JS_CONST.finditer(code):
            code = rx.sub(
                r"(?<![\w$.'\"`])" + rx.escape(m[1]) + r"(?![\w$'\"`]|\s*=[^=])", "'" + m[3] + "'", code
            )
        folded = JS_CONCAT.sub(lambda m: m[1] + m[2] + m[4] + m[1], code)
        folded = JS_JOIN.sub(
            lambda m: "'" + m[4].join(s[2] for s in JS_STRING.finditer(m[1])) + "'",
            folded,
        )
        if folded == code:
            break
        code = folded
    return code


def _js_calls(name: str, code: str, cwd: str | None) -> list[NormalCall]:
    folded = fold_js(code)
    found = [
        ("read" if m[1].startswith(COPIES) else m[1], resolve(m[3], cwd)) for m in JS_FS.finditer(folded)
    ]
    found += [("writeFile", resolve(m[3], cwd)) for m in JS_TWO.finditer(folded)]
    read = {p for f, p in found if f.startswith(("read", "file_get", "File.read"))}
    writes: list[tuple[str, str]] = []
    edits: list[Edit] = []
    deletes: list[str] = []
    for function, path in found:
        if function.startswith(("read", "file_get", "File.read")):
            continue
        if function.startswith(("rm", "unlink", "rmdir", "File.delete", "FileUtils", "rename")):
            deletes.append(path)
        elif path in read:  # read and written back: an edit of an existing file
            edits.append(Edit(path, "\x00rewritten", ""))
        else:
            writes.append((path, ""))
    out = [NormalCall(name, ToolKind.SHELL, command=m[2]) for m in JS_EXEC.finditer(folded)]
    reads = tuple(p for f, p in found if f.startswith(("read", "file_get", "File.read")))
    if writes or deletes or reads or edits:
        effects = NormalCall(
            name, ToolKind.WRITE, writes=tuple(writes), edits=tuple(edits), deletes=tuple(deletes)
        )
        out.append(replace(effects, reads=reads))
    if folded != code:
        out.append(NormalCall(name, ToolKind.CODE, code=folded))
    return out


# A folded string that can name a place to connect to (`'metrics'` beside `getaddrinfo` is judged in the
# code itself, where its port shows it is a host).
ADDRESS = rx.compile(r"://|^\d{1,3}(?:\.\d{1,3}){3}$|^(?:[a-z0-9-]+\.)+[a-z]{2,}$", rx.I)


def _python_calls(name: str, code: str, cwd: str | None) -> list[NormalCall]:
    found = python_effects(code, cwd)
    if not found.parsed:
        return []
    out = [NormalCall(name, ToolKind.SHELL, command=c) for c in found.commands]
    out += [NormalCall(name, ToolKind.CODE, code=c) for c in found.code]
    if found.writes or found.deletes or found.reads:
        strings = "\n".join(found.strings)  # what it may write: its string constants
        writes = tuple((p, strings) for p in found.writes)
        out.append(NormalCall(name, ToolKind.WRITE, writes=writes, deletes=found.deletes, reads=found.reads))
    if found.env_dump:
        out.append(NormalCall(name, ToolKind.SHELL, command="env"))
    addresses = [s for s in found.strings if ADDRESS.search(s)]
    if addresses:  # folded strings (`"http://" + host`), with the network calls the code makes
        reaches = " ".join(m[0] + ")" for m in NET_API.finditer(code))
        out.append(NormalCall(name, ToolKind.CODE, code="\n".join(addresses) + "\n" + reaches))
    return out


def _patch_edits(name: str, command: str, facts: SessionFacts) -> list[NormalCall]:
    view = read_shell(command, facts.cwd)
    applies = any(
        c.name == "patch" or (c.name == "git" and any(w in ("apply", "am") for w in c.argv[1:3]))
        for c in view.commands
    )
    if not applies:
        return []
    texts = list(view.bodies)
    for c in view.commands:
        texts += [facts.patches[p] for p in (resolve(w, c.cwd) for w in c.argv[1:]) if p in facts.patches]
    if not texts:  # the patch comes through a pipe (`git diff … -- PATH | git apply -R`): its paths
        paths = [
            resolve(w, c.cwd)
            for c in view.commands
            if c.name == "git" and "--" in c.argv
            for w in c.argv[c.argv.index("--") + 1 :]
        ]
        return (
            [NormalCall(name, ToolKind.EDIT, edits=tuple(Edit(p, "\x00patched", "") for p in paths))]
            if paths
            else []
        )
    edits = [
        Edit(resolve(m[1] or m[2], facts.cwd), "\x00patched", "")
        for text in texts
        for m in DIFF_TARGET.finditer(text)
        if (m[1] or m[2]) != "/dev/null"
    ]
    return [NormalCall(name, ToolKind.EDIT, edits=tuple(edits))] if edits else []


def _direct(call: NormalCall, facts: SessionFacts) -> list[NormalCall]:
    name = call.name
    out: list[NormalCall] = []
    texts = [t for t in (call.command, call.code) if t]
    for text in texts:
        for payload in payloads(text):
            out.append(NormalCall(name, ToolKind.SHELL, command=payload))
            out.append(NormalCall(name, ToolKind.CODE, code=payload))
            if "/" in payload and not any(ch.isspace() for ch in payload.strip()):  # a decoded path
                out.append(NormalCall(name, ToolKind.READ, reads=(payload.strip(),)))
    codes: list[tuple[str, str]] = []
    if call.code:
        codes.append(("python", call.code))
    if call.command:
        view = read_shell(call.command, facts.cwd)
        for c in view.commands:
            if c.name.startswith(("node", "deno", "bun")):
                codes += [("js", w) for w in c.argv[1:] if "(" in w]
        codes += [("python", c) for c in view.code]
        out += _patch_edits(name, call.command, facts)
        out += run_calls(name, view, facts)
        out += package_script_writes(name, view)
        for c in view.commands:  # `eval "…${a}${b}…"`: the words it runs, variables expanded
            if c.name == "eval" and len(c.argv) > 1 and not any(c.unresolved[1:]):
                out.append(NormalCall(name, ToolKind.SHELL, command=" ".join(c.argv[1:])))
    for language, code in codes:
        if language == "js":
            out += _js_calls(name, code, facts.cwd)
        else:
            out += _python_calls(name, code, facts.cwd) + _js_calls(name, code, facts.cwd)
    return out


def derived_calls(call: NormalCall, facts: SessionFacts) -> list[NormalCall]:
    """Every call `call` makes indirectly (see the module docstring), breadth first."""
    out: list[NormalCall] = []
    frontier = [call]
    for _ in range(MAX_DEPTH):
        found: list[NormalCall] = []
        for item in frontier:
            found += [d for d in _direct(item, facts) if d not in out and d != call]
        out += found
        frontier = found
        if not found or len(out) >= MAX_DERIVED:
            break
    return out[:MAX_DERIVED]
