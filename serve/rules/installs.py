"""Installs of what the project declares: ``npm ci``, ``pip install -r requirements.txt``, ``go mod tidy``.

Such a command fetches the dependencies the project's own manifest or lockfile lists, from the registry
its package manager reaches by default; the agent chooses neither the packages nor the host. The hosts
rule treats the default registries as known for it (unless the conversation configured another
registry or said the work is offline). A command that names a package (``pip install requests``,
``npm install left-pad``) chooses one: that needs the user's words, either naming the package
(``go install …/protoc-gen-go@v1.34.2`` when the user wrote "protoc-gen-go") or asking to install
(``serve.policy``). Upgrading the installer itself (``pip install -U pip``) is declared work too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .shellwords import operands

if TYPE_CHECKING:
    from .shellread import ShellCommand, ShellView

MANIFEST = re.compile(
    r"(?:^|/)(?:requirements[\w.-]*\.(?:txt|in)|constraints[\w.-]*\.txt|package(?:-lock)?\.json|yarn\.lock|"
    r"pnpm-lock\.yaml|pyproject\.toml|uv\.lock|poetry\.lock|Pipfile(?:\.lock)?|setup\.(?:py|cfg)|go\.(?:mod|sum)|"
    r"Cargo\.(?:toml|lock)|build\.rs|Gemfile(?:\.lock)?|composer\.(?:json|lock)|mix\.(?:exs|lock)|\.npmrc|pip\.conf|"
    r"[\w.-]+\.csproj)$"
)
"""Files that say what an install fetches and from where: one the session wrote makes its installs its own."""
OPTION_VALUES = frozenset(
    {"--features", "-F", "--vers", "--version", "-p", "--package", "--rename", "--target"}
)
"""Options of package managers that take the next word as their value (no package name)."""
PIP_VALUES = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "--python", "-t"})
NODE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
PIPS = frozenset({"pip", "pip3"})
# (program, first operand) pairs that build or fetch only what the manifest declares.
DECLARED = frozenset(
    {
        ("go", "build"),
        ("go", "test"),
        ("go", "vet"),
        ("cargo", "build"),
        ("cargo", "test"),
        ("cargo", "check"),
        ("cargo", "fetch"),
        ("cargo", "clippy"),
        ("cargo", "bench"),
        ("cargo", "doc"),
        ("bundle", "install"),
        ("composer", "install"),
        ("poetry", "install"),
        ("pipenv", "sync"),
        ("uv", "sync"),
        ("mix", "deps.get"),
        ("dotnet", "restore"),
        ("dotnet", "build"),
        ("dotnet", "test"),
    }
)
FETCHERS = frozenset(
    {"go", "cargo", "bundle", "composer", "poetry", "pipenv", "uv", "mix", "dotnet", "gem"}
    | NODE_MANAGERS
    | PIPS
)
"""Programs that may fetch packages: every use of one in a call must install only what is declared."""


INSTALLERS = frozenset({"pip", "setuptools", "wheel"})
VERSION = re.compile(r"(?<=.)(?:@|==|>=|<=|~=|!=|>|<|\[).*$")


def package_name(word: str) -> str:
    """``example.org/x/protoc-gen-go@v1.34.2``: ``protoc-gen-go``; ``'pydantic>=2,<3'``: ``pydantic``."""
    return VERSION.sub("", word.strip("'\"")).rstrip("/").rsplit("/", 1)[-1].lower()


def _chosen(word: str, named: frozenset[str], paths: bool = False) -> bool:
    """Whether ``word`` picks a package the project does not declare and the user did not name; a URL, a
    ``user/repo`` shorthand or a ``git+`` spec always does (``paths``: module paths, as Go writes them)."""
    if word == "." or word.startswith(("./", ".[", "../", "/")):  # the project itself
        return False
    if ":" in word or (
        not paths and "/" in word.lstrip("@").split("/", 1)[-1]
        if word.startswith("@")
        else not paths and "/" in word
    ):
        return True
    return package_name(word) not in named | INSTALLERS


def declared_install(command: ShellCommand, named: frozenset[str] = frozenset()) -> bool | None:
    """True: a fetch of what the project declares (or of packages in ``named``, the words the user
    wrote); False: a fetch that chooses packages; None: no fetch."""
    argv = command.argv
    name = command.name
    if name == "python" or name.startswith("python3"):  # python -m pip install ...
        if argv[1:3] != ("-m", "pip"):
            return None
        argv, name = argv[2:], "pip"
    if name == "uv" and argv[1:2] == ("pip",):
        argv, name = argv[1:], "pip"
    if name not in FETCHERS:
        return None
    if name in PIPS:
        words = [w for _, w in operands(tuple(argv), PIP_VALUES)]
        if words[:1] not in (["install"], ["download"]):
            return None
        return words[0] == "install" and not any(_chosen(w, named) for w in words[1:])
    if any(w.split("=", 1)[0] in ("--git", "--registry", "--index", "--index-url") for w in argv):
        return False  # a source of its own choosing
    words = [w for _, w in operands(tuple(argv), OPTION_VALUES)]
    if name in NODE_MANAGERS:
        if name == "yarn" and not words:
            return True
        if words[:1] not in (["ci"], ["install"], ["i"], ["add"]):
            return None
        return not any(_chosen(w, named) for w in words[1:])
    if name == "go" and words[:1] == ["mod"]:
        return words[1:2] in (["tidy"], ["download"], ["vendor"], ["verify"], ["init"]) and not any(
            _chosen(w, named) for w in words[2:] if words[1] != "init"
        )
    if (name == "go" and words[:1] in (["get"], ["install"])) or (
        name in ("cargo", "gem") and words[:1] in (["add"], ["install"])
    ):
        return bool(words[1:]) and not any(_chosen(w, named, paths=name == "go") for w in words[1:])
    return True if (name, words[0] if words else "") in DECLARED else None


def installs_only_declared(view: ShellView, named: frozenset[str] = frozenset()) -> bool:
    """Whether the commands fetch packages, and only what the project declares or the user named."""
    found = [declared_install(c, named) for c in view.commands]
    fetches = [f for f in found if f is not None]
    return bool(fetches) and all(fetches)
