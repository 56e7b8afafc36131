"""Files a shell command changes through its arguments, beyond redirections.

atif-scan's reader knows `>`, `tee`, `cp`, `mv` destinations and `sed -i`. Agents also edit in
place and undo through version control, and each of these is a write to its targets:

- in-place editors: `perl -i/-pi`, `sed -i/-Ei/--in-place`, `ex`, `vi/vim -es -c …`, `ed`;
- version control: `git checkout/restore [--source=R] -- PATHS` (the paths get another
  content), `git rm PATHS` (deletes);
- removal: `rm [-r]`, `rmdir`, `unlink`, `shred`, `truncate` (a write), `mv` sources, and
  `find ROOTS … -delete` or `-exec rm|sed -i …` (`ROOT/NAME`, `ROOT/**/NAME` per name test, else
  everything under the roots);
- `touch`/`chmod` change no content and are not writes here.

Paths are resolved against the command's directory; a folder deleted counts for every file
under it (the rules test by prefix).
"""

from __future__ import annotations

from .shellwords import operands, resolve

PERL_VALUES = frozenset({"-e", "-E", "-M", "-I", "-m", "-x"})
SED_VALUES = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})
EX_VALUES = frozenset({"-c", "-S", "-u", "-i", "-T", "-w", "-W", "--cmd"})
GIT_VALUES = frozenset({"-s", "--source", "-C", "-c", "-b", "-B", "--conflict", "--pathspec-from-file"})
REMOVERS = frozenset({"rm", "unlink", "shred", "rmdir", "srm"})
FIND_PREDICATES = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
EDITORS = frozenset({"ex", "vi", "vim", "nvim", "ed", "red"})


def _short_flags(argv: tuple[str, ...]) -> set[str]:
    out: set[str] = set()
    for word in argv[1:]:
        if word.startswith("-") and not word.startswith("--") and len(word) > 1:
            out.update(word[1:])
    return out


def _sed(argv: tuple[str, ...]) -> list[str]:
    in_place = any(
        w == "--in-place"
        or w.startswith("--in-place=")
        or (w.startswith("-") and not w.startswith("--") and "i" in w)
        for w in argv[1:]
    )
    if not in_place:
        return []
    args = [w for _, w in operands(argv, SED_VALUES)]
    scripted = any(
        w in ("-e", "--expression", "-f", "--file") or w.startswith(("-e", "--expression=")) for w in argv
    )
    return args if scripted else args[1:]


def _editor(name: str, argv: tuple[str, ...], here: str | None) -> list[str]:
    """Files a non-interactive ex/vi/ed run edits (`-c CMD`, `+CMD`, `-s`, `-es`)."""
    scripted = name in ("ed", "red")
    files: list[str] = []
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
        elif word.startswith("+"):
            scripted = True
        elif word.startswith("-") and not word.startswith("--") and len(word) > 1:
            scripted = scripted or any(f in word for f in "sce")
            skip = word[-1] in "cSuiTwW"
        elif word.startswith("--"):
            skip = word == "--cmd"
            scripted = scripted or skip
        else:
            files.append(resolve(word, here))
    return files if scripted else []


def _tar(argv: tuple[str, ...], here: str | None) -> list[str]:
    """Members `tar -x` writes (named ones, under `-C DIR`); a whole archive writes into DIR."""
    first = argv[1] if len(argv) > 1 else ""
    extracting = (
        "--extract" in argv
        or "--get" in argv
        or (not first.startswith("--") and "x" in first.lstrip("-"))
        or any(w.startswith("-") and not w.startswith("--") and "x" in w for w in argv[1:])
    )
    if not extracting:
        return []
    target = here
    for i, word in enumerate(argv):
        if word in ("-C", "--directory") and i + 1 < len(argv):
            target = resolve(argv[i + 1], here)
        elif word.startswith("--directory="):
            target = resolve(word.split("=", 1)[1], here)
    values = {"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"}
    members = [w for _, w in operands(argv, frozenset(values))]
    if not first.startswith("-"):
        members = members[1:]  # the old-style flags word (`tar xzf A`)
        if "f" in first and members:
            members = members[1:]  # its archive
    return [
        resolve(m, target) for m in members if not m.endswith((".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst"))
    ]


def _find(argv: tuple[str, ...], here: str | None) -> tuple[list[str], list[str]]:
    roots: list[str] = []
    for word in argv[1:]:
        if word.startswith(("-", "(", "!")) or word in ("(", "!"):
            break
        roots.append(resolve(word, here))
    roots = _matched(argv, roots or [resolve(".", here)])
    if "-delete" in argv:
        return [], roots
    for i, word in enumerate(argv):
        if word in FIND_PREDICATES and i + 1 < len(argv):
            program = argv[i + 1].rsplit("/", 1)[-1]
            if program in REMOVERS:
                return [], roots
            if program in ("sed", "perl", "truncate", "tee", "cp", "mv", "dd") or program in EDITORS:
                return roots, []
    return [], []


FIND_NAMES = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename"})


def _matched(argv: tuple[str, ...], roots: list[str]) -> list[str]:
    """What a `find` acts on: `ROOT/**/PATTERN` for each name test (`find tests -name '*.pyc'` touches
    bytecode, not the tests), or the whole roots when it has none or negates one."""
    if any(w in ("-not", "!") for w in argv):
        return roots
    names = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] in FIND_NAMES]
    if not names:
        return roots
    return [
        f"{root.rstrip('/')}/{deep}{name.lstrip('/')}"
        for root in roots
        for name in names
        for deep in ("", "**/")
    ]


def _git(argv: tuple[str, ...], here: str | None) -> tuple[list[str], list[str]]:
    args = operands(argv, GIT_VALUES)
    if not args:
        return [], []
    sub = args[0][1]
    rest = [w for _, w in args[1:]]
    if sub == "rm":
        return [], [resolve(w, here) for w in rest]
    if sub == "mv" and len(rest) >= 2:
        return [resolve(rest[-1], here)], [resolve(w, here) for w in rest[:-1]]
    if sub == "stash" and "--" in argv:  # `git stash push -- tests/`: those paths go back to HEAD
        return [resolve(w, here) for w in argv[argv.index("--") + 1 :]], []
    if sub not in ("checkout", "restore"):
        return [], []
    if "--" in argv:
        paths = list(argv[argv.index("--") + 1 :])
    elif sub == "restore":
        paths = rest
    else:  # `git checkout REV PATH…` or `git checkout BRANCH`: paths are what follows a revision
        paths = rest[1:] if len(rest) > 1 else [w for w in rest if "/" in w or "." in w]
    return [resolve(w, here) for w in paths], []


def argument_effects(name: str, argv: tuple[str, ...], here: str | None) -> tuple[list[str], tuple[str, ...]]:
    """(paths written, paths deleted) by `argv`'s arguments; see the module docstring."""
    if name in REMOVERS:
        return [], tuple(resolve(w, here) for _, w in operands(argv))
    if name == "truncate":
        return [resolve(w, here) for _, w in operands(argv, frozenset({"-s", "--size", "-r"}))], ()
    if name == "mv":
        words = [w for _, w in operands(argv, frozenset({"-t", "--target-directory", "-S"}))]
        return [], tuple(resolve(w, here) for w in words[:-1])
    if name in ("perl", "ruby") and "i" in _short_flags(argv):
        return [resolve(w, here) for _, w in operands(argv, PERL_VALUES)], ()
    if name == "sed":
        return [resolve(w, here) for w in _sed(argv)], ()
    if name in EDITORS:
        return _editor(name, argv, here), ()
    if name == "sponge":  # `… | sponge FILE`: the file is replaced by what was read from it
        return [resolve(w, here) for _, w in operands(argv)], ()
    if name in ("gofmt", "gofumpt") and "-r" in argv:  # a rewrite rule applied in place
        return [resolve(w, here) for _, w in operands(argv, frozenset({"-r"})) if "." in w], ()
    if name == "npm" and argv[1:3] in (("pkg", "set"), ("pkg", "delete")):
        return [resolve("package.json", here)], ()
    if name == "tar":
        return _tar(argv, here), ()
    if name == "find":
        writes, deletes = _find(argv, here)
        return writes, tuple(deletes)
    if name == "git":
        writes, deletes = _git(argv, here)
        return writes, tuple(deletes)
    return [], ()
