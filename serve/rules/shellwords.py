"""Words of a shell command: paths made absolute, operands and option values. Shared by the shell reader
(``shellread``) and the effects of commands' arguments (``shellfx``), which build on each other."""

from __future__ import annotations

import posixpath


def resolve(path: str, cwd: str | None) -> str:
    """`path` as an absolute normalised path when it can be; `~` and `$` paths stay as given."""
    if path.startswith(("~", "$")):
        return path
    if path.startswith("/"):
        return "/" + posixpath.normpath(path).lstrip("/")  # POSIX keeps a leading `//`
    if cwd:
        return posixpath.normpath(posixpath.join(cwd, path))
    return posixpath.normpath(path) if path else path


def operands(argv: tuple[str, ...], values: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """(index, word) of the non-option arguments after the name; options in `values` take the
    next word as their value (`--opt=value` forms take none)."""
    out: list[tuple[int, str]] = []
    skip, options = False, True
    for i, word in enumerate(argv[1:], start=1):
        if skip:
            skip = False
        elif options and word == "--":
            options = False
        elif options and word.startswith("-") and word != "-":
            skip = word in values
        else:
            out.append((i, word))
    return out


def option_values(argv: tuple[str, ...], names: frozenset[str]) -> list[tuple[int, str]]:
    """Values of the options in `names`: `-x V`, `--name V`, `--name=V` and `-xV` (short)."""
    out: list[tuple[int, str]] = []
    for i, word in enumerate(argv[1:], start=1):
        if word in names and i + 1 < len(argv):
            out.append((i + 1, argv[i + 1]))
            continue
        head, eq, value = word.partition("=")
        if eq and head in names:
            out.append((i, value))
        elif len(word) > 2 and word[:2] in names and not word.startswith("--"):
            out.append((i, word[2:]))
    return out
