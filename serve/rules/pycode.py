"""What a piece of Python does to files, processes and the environment, read from its syntax tree.

Pattern rules see `open('tests/test_x.py', 'w')`, but not `open(os.path.join('te' + 'sts', f),
'w')`. `python_effects(code, cwd)` parses the code (`ast`, nothing runs) and folds string
constants: literals, `+` concatenation, f-strings of constants, `os.path.join`, `'/'.join([...])`,
`Path(...) / '...'` and names assigned once to such values. It then reads the calls:

- writes: `open(p, 'w'|'a'|'x'|'+')`, `Path(p).write_text/write_bytes/open('w')`, `shutil.copy*`,
  `shutil.move`, `os.rename/replace/symlink` destinations;
- deletes: `os.remove/unlink/rmdir/removedirs`, `shutil.rmtree`, `Path(p).unlink/rmdir`, and move sources;
- reads: `open(p)` for reading, `Path(p).read_text/read_bytes`, `glob.glob`, `os.listdir/walk/scandir`;
- commands: `os.system/popen`, `subprocess.*` (a list argument is joined as shell words);
- code: `exec`/`eval`/`compile` of a folded string;
- environment: `os.environ` used whole (dumped), and the names read through it or `getenv`.

A path built from something the fold can't resolve (a function result, a loop variable) is
kept as `None` in `unresolved`, so rules can decide what an unknown target means. Code that
does not parse gives an empty result with `parsed=False`; the callers' text patterns still
apply to it.
"""

from __future__ import annotations

import ast
import functools
import posixpath
import shlex
import warnings
from dataclasses import dataclass

from .shellwords import resolve

WRITE_METHODS = frozenset({"write_text", "write_bytes", "touch", "symlink_to", "hardlink_to"})
DELETE_METHODS = frozenset({"unlink", "rmdir"})
READ_METHODS = frozenset({"read_text", "read_bytes", "iterdir", "glob", "rglob"})
DELETE_CALLS = frozenset({"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "shutil.rmtree"})
READ_CALLS = frozenset({"glob.glob", "glob.iglob", "os.listdir", "os.walk", "os.scandir"})
SHELL_CALLS = frozenset({"os.system", "os.popen", "commands.getoutput"})
SUBPROCESS = frozenset({"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"})
MOVE_CALLS = frozenset({"shutil.move", "os.rename", "os.replace", "os.renames"})
COPY_CALLS = frozenset(
    {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "os.symlink", "os.link"}
)
OS_CONSTANTS = {"os.sep": "/", "os.path.sep": "/", "os.curdir": ".", "os.pardir": "..", "os.altsep": "/"}
NAMED_CALLS = DELETE_CALLS | READ_CALLS | MOVE_CALLS | COPY_CALLS | SHELL_CALLS
ENV_SINGLE = frozenset({"get", "setdefault", "pop", "update", "__getitem__", "__setitem__"})
MAX_CODE = 256 * 1024


@dataclass(frozen=True, slots=True)
class CodeEffects:
    parsed: bool = False
    writes: tuple[str, ...] = ()
    deletes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    code: tuple[str, ...] = ()
    strings: tuple[str, ...] = ()  # every folded string constant (URLs, hosts, paths)
    env_dump: bool = False
    env_names: tuple[str, ...] = ()
    unresolved: bool = False  # some file or command target could not be folded


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _chr_map(node: ast.AST) -> list[str] | None:
    if not (isinstance(node, ast.Call) and _dotted(node.func) == "map" and len(node.args) == 2):
        return None
    func, items = node.args
    if _dotted(func) != "chr" or not isinstance(items, ast.List | ast.Tuple):
        return None
    codes = [e.value for e in items.elts if isinstance(e, ast.Constant) and isinstance(e.value, int)]
    if len(codes) != len(items.elts) or not all(0 <= c < 0x110000 for c in codes):
        return None
    return [chr(c) for c in codes]


class _Reader(ast.NodeVisitor):
    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.names: dict[str, str] = {}
        self.writes: list[str] = []
        self.deletes: list[str] = []
        self.reads: list[str] = []
        self.commands: list[str] = []
        self.code: list[str] = []
        self.strings: list[str] = []
        self.env_names: list[str] = []
        self.env_dump = False
        self.unresolved = False

    # -- folding -----------------------------------------------------------------------
    def fold(self, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("utf-8", "replace")
            return None
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and _dotted(node) in OS_CONSTANTS:
            return OS_CONSTANTS[_dotted(node)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.fold(node.left), self.fold(node.right)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path(a) / "b"
            left, right = self.fold(node.left), self.fold(node.right)
            return posixpath.join(left, right) if left is not None and right is not None else None
        if isinstance(node, ast.JoinedStr):
            parts = [self.fold(v.value if isinstance(v, ast.FormattedValue) else v) for v in node.values]
            return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
        if isinstance(node, ast.Call):
            return self._fold_call(node)
        return None

    def _fold_call(self, node: ast.Call) -> str | None:
        name = _dotted(node.func)
        args = [self.fold(a) for a in node.args]
        if name in ("os.path.join", "posixpath.join") and args and all(a is not None for a in args):
            return posixpath.join(*args)  # type: ignore[arg-type]
        if (
            name.split(".")[-1] in ("Path", "PurePath", "PosixPath")
            and args
            and all(a is not None for a in args)
        ):
            return posixpath.join(*args)  # type: ignore[arg-type]
        if name in ("str", "os.fspath", "os.path.abspath", "os.path.normpath") and len(args) == 1:
            return args[0]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1:
            sep = self.fold(node.func.value)
            items = node.args[0]
            chars = _chr_map(items)
            if sep is not None and chars is not None:  # "".join(map(chr, [47, 108, …]))
                return sep.join(chars)
            if sep is not None and isinstance(items, ast.List | ast.Tuple):
                parts = [self.fold(e) for e in items.elts]
                if all(p is not None for p in parts):
                    return sep.join(parts)  # type: ignore[arg-type]
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("decode", "format") and not node.args:
            return self.fold(node.func.value)
        return None

    def _path(self, node: ast.AST | None, into: list[str]) -> None:
        value = self.fold(node)
        if value is None:
            self.unresolved = True
        else:
            into.append(resolve(value, self.cwd))

    # -- visiting ----------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        value = self.fold(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if value is None:
                    self.names.pop(target.id, None)
                else:
                    self.names[target.id] = value

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value:
            self.strings.append(node.value)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        folded = self.fold(node)
        if folded is not None:
            self.strings.append(folded)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _dotted(node) == "os.environ":
            self.env_dump = True  # narrowed in visit_Subscript / visit_Call for single names
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _dotted(node.value) == "os.environ":
            name = self.fold(node.slice)
            if name is not None:
                self.env_names.append(name)
                self.visit(node.slice)
                return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        args = node.args
        if name.startswith("os.environ.") and method in ENV_SINGLE:
            for a in args:
                self.visit(a)
            folded = self.fold(args[0]) if args and method != "update" else None
            if folded is not None:
                self.env_names.append(folded)
            return
        if name in ("os.getenv", "os.getenvb") and args:
            folded = self.fold(args[0])
            if folded is not None:
                self.env_names.append(folded)
                for a in args[1:]:
                    self.visit(a)
                return
        if name in ("open", "io.open", "codecs.open") and args:
            mode = self.fold(args[1]) if len(args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = self.fold(kw.value)
            writing = mode is not None and any(c in mode for c in "wax+")
            self._path(args[0], self.writes if writing else self.reads)
        elif name not in NAMED_CALLS and (
            method in WRITE_METHODS | DELETE_METHODS | READ_METHODS or method == "open"
        ):
            target = node.func.value  # type: ignore[union-attr]
            if method == "open":
                mode = self.fold(args[0]) if args else None
                into = self.writes if mode is not None and any(c in mode for c in "wax+") else self.reads
            else:
                into = (
                    self.writes
                    if method in WRITE_METHODS
                    else self.deletes
                    if method in DELETE_METHODS
                    else self.reads
                )
            folded = self.fold(target)
            if folded is not None:
                path = (
                    posixpath.join(folded, self.fold(args[0]) or "")
                    if method in ("glob", "rglob")
                    else folded
                )
                into.append(resolve(path, self.cwd))
            elif method in WRITE_METHODS | DELETE_METHODS:
                self.unresolved = True
        elif name in DELETE_CALLS and args:
            self._path(args[0], self.deletes)
        elif name in READ_CALLS:
            self._path(args[0] if args else ast.Constant("."), self.reads)
        elif name in MOVE_CALLS and len(args) >= 2:
            self._path(args[0], self.deletes)
            self._path(args[1], self.writes)
        elif name in COPY_CALLS and len(args) >= 2:
            self._path(args[1], self.writes)
        elif (
            name in SHELL_CALLS
            and args
            or (name.startswith("subprocess.") and name.split(".")[-1] in SUBPROCESS and args)
        ):
            self._command(args[0])
        elif name in ("exec", "eval", "compile", "builtins.exec") and args:
            folded = self.fold(args[0])
            if folded is not None:
                self.code.append(folded)
            else:
                self.unresolved = True
        self.generic_visit(node)

    def _command(self, node: ast.AST) -> None:
        if isinstance(node, ast.List | ast.Tuple):
            words = [self.fold(e) for e in node.elts]
            if all(w is not None for w in words):
                self.commands.append(shlex.join(words))  # type: ignore[arg-type]
                return
        else:
            folded = self.fold(node)
            if folded is not None:
                self.commands.append(folded)
                return
        self.unresolved = True


@functools.lru_cache(maxsize=1024)
def python_effects(code: str, cwd: str | None = None) -> CodeEffects:
    """The effects of `code` (see the module docstring); `parsed=False` when it isn't Python."""
    if len(code) > MAX_CODE:
        return CodeEffects()
    try:
        with warnings.catch_warnings():  # text that isn't Python warns while it fails to parse
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return CodeEffects()
    reader = _Reader(cwd)
    try:
        reader.visit(tree)
    except RecursionError:
        return CodeEffects()
    return CodeEffects(
        True,
        tuple(reader.writes),
        tuple(reader.deletes),
        tuple(reader.reads),
        tuple(reader.commands),
        tuple(reader.code),
        tuple(dict.fromkeys(reader.strings)),
        reader.env_dump,
        tuple(reader.env_names),
        reader.unresolved,
    )
