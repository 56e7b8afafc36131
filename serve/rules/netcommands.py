"""Hosts a shell command reaches, read per program: the command-line half of the hosts rule.

`_Collector` gathers the hosts one command can reach; `HANDLERS` knows, per program, where a host
sits in its arguments: curl/wget option values and proxies, git remotes, URLs and config, ssh
targets and proxy commands, package managers and their registries (the configured one when the
conversation says so), resolvers and netcat, database clients, docker registries, socat addresses.
A program with no handler, an interpreter included, contributes the hosts of its URL arguments.
`serve.rules.hosts` adds code, configuration files and the verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .. import rx
from .facts import IPV4, normalize_host
from .shellread import INTERPRETER, ShellCommand, ShellView, read_shell
from .shellwords import operands, option_values

if TYPE_CHECKING:
    from .facts import SessionFacts

UNRESOLVED_WORD = rx.compile(r"\$[{(A-Za-z_]|`")
URL = rx.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`)\]},]+")
FIXED_HOST_URL = rx.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#$`\\\s'\"@]+(?=[/?#])")
SCP_LIKE = rx.compile(r"^(?:[\w.-]+@)?([\w.-]+|\[[0-9a-fA-F:]+\]):(?!//)")
BARE_HOST = rx.compile(
    r"^(?:[\w.-]+@)?((?:[a-z0-9-]+\.)+[a-z]{2,}|\d{1,3}(?:\.\d{1,3}){3}|localhost)(?::\d+)?(?:/|$)", rx.I
)
NET_WORDS = rx.compile(r"\b(?:curl|wget|git|ssh|scp|rsync|pip3?|npm|yarn|nc|telnet|dig|http)\b")
# Calls that reach the network (not `urllib.parse`, `socket.gethostname`).

PROXY_VARIABLE = rx.compile(
    r"^(?:https?|all|ftp|no)_proxy$|^(?:PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|NPM_CONFIG_REGISTRY|"
    r"npm_config_registry|GOPROXY|CARGO_REGISTRIES_\w+_INDEX|UV_INDEX_URL|PYPI_URL)$",
    rx.I,
)
NO_FETCH = frozenset({"echo", "printf", "grep", "rg", "sed", "awk", "jq", "cat", "ls", "test", "["})

CURL_VALUES = frozenset(
    "-o -H -d -X -u -A -e -w -T -F -b -c -m -K -E -r -y -Y -z -C -D -Q --output --header --data "
    "--data-raw --data-binary --data-urlencode --request --user --user-agent --referer "
    "--write-out --upload-file --form --cookie --cookie-jar --max-time --connect-timeout "
    "--retry --config --cert --key --cacert --range --limit-rate --dump-header --json".split()
)
WGET_VALUES = frozenset(
    "-O -o -P -U -t -T -e --output-document --header --user-agent --tries "
    "--timeout --directory-prefix -a --append-output".split()
)
SSH_VALUES = frozenset("-p -P -i -l -o -F -J -L -R -D -b -c -E -e -m -O -S -W -w".split())
PIP_INDEX = frozenset({"-i", "--index-url", "--extra-index-url", "-f", "--find-links"})
REGISTRY = {"npm": "registry.npmjs.org", "yarn": "registry.yarnpkg.com", "pnpm": "registry.npmjs.org"}
GIT_NET = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule"})


def url_host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower() if host else None


class _Collector:
    def __init__(self, facts: SessionFacts) -> None:
        self.facts = facts
        self.hosts: set[str] = set()
        self.unresolved = False
        self.remotes: dict[
            str, str
        ] = {}  # remotes this call adds (`git remote add NAME URL && git fetch NAME`)

    def registry(self, default: str) -> None:
        """A package command with no explicit index reaches the registry the machine is configured
        for: the public default, unless the conversation said a registry of its own is configured
        (then that one, which it named)."""
        if not self.facts.registry_configured:
            self.hosts.add(default)

    def word(self, word: str, unresolved: bool, bare: bool = False) -> None:
        """A word in a network position: a URL, `user@host:path`, or (bare) `host/path`. A variable
        after the host (`http://127.0.0.1:3000/items?limit=$n`) leaves the host known."""
        if unresolved:
            fixed = FIXED_HOST_URL.match(word)
            if fixed and url_host(fixed[0]):
                self.hosts.add(url_host(fixed[0]) or "")
            else:
                self.unresolved = True
            return
        found = URL.search(word)
        if found:
            host = url_host(found[0])
            if host:
                self.hosts.add(host)
            else:
                self.unresolved = True
            return
        scp = SCP_LIKE.match(word)
        if scp and not word.startswith(("/", ".")):
            self.hosts.add(normalize_host(scp[1]))
            return
        if bare:
            host = BARE_HOST.match(word)
            if host:
                self.hosts.add(host[1].lower())

    def command(self, c: ShellCommand) -> None:
        name, argv, un = c.name, c.argv, c.unresolved
        for key, value in c.env:
            if PROXY_VARIABLE.match(key) and not key.lower().startswith("no_"):
                self.word(value, bool(UNRESOLVED_WORD.search(value)), bare=True)
        handler = HANDLERS.get(name)
        if handler is not None:
            handler(self, c)
        elif name not in NO_FETCH and not INTERPRETER.fullmatch(name):  # code: judged by code_hosts
            for i, word in enumerate(argv[1:], start=1):
                if "://" in word or (un[i] and "://" in argv[i]):
                    self.word(word, un[i])
        elif INTERPRETER.fullmatch(name):  # `python fetch.py https://host/x`: a URL it may reach
            for i, word in enumerate(argv[1:], start=1):
                if URL.fullmatch(word):
                    self.word(word, un[i])
        if name == "python" or name.startswith("python"):
            if argv[1:3] == ("-m", "pip"):
                _pip(self, c, start=3)


def _curl(col: _Collector, c: ShellCommand) -> None:
    values = CURL_VALUES if c.name == "curl" else WGET_VALUES
    config = {"-K", "--config"} if c.name == "curl" else {"-i", "--input-file", "--config"}
    if option_values(c.argv, frozenset(config)):
        col.unresolved = True  # the URLs are in a file the guard does not read
    for _, value in option_values(c.argv, frozenset({"-e", "--execute"})):  # wget -e https_proxy=H
        key, eq, target = value.partition("=")
        if eq and PROXY_VARIABLE.match(key.strip()):
            col.word(target.strip(), False, bare=True)
    for i, value in option_values(c.argv, frozenset({"-x", "--proxy", "--url", "--preproxy"})):
        col.word(value, c.unresolved[i], bare=True)
    for _, value in option_values(c.argv, frozenset({"--resolve", "--connect-to"})):
        parts = value.split(":")
        col.hosts.add(parts[0].lower())
        if len(parts) >= 3 and parts[2]:
            col.hosts.add(
                normalize_host(":".join(parts[2:]).strip("[]")) if value.count(":") > 3 else parts[2].lower()
            )
    for i, word in operands(
        c.argv, values | frozenset({"-x", "--proxy", "--resolve", "--connect-to", "--url"})
    ):
        col.word(word, c.unresolved[i], bare=True)


def _git(col: _Collector, c: ShellCommand) -> None:
    args = operands(
        c.argv,
        frozenset({"-C", "-c", "--git-dir", "--work-tree", "-b", "--branch", "--depth", "-o", "--origin"}),
    )
    if args and args[0][1] == "config":  # url.X.insteadOf, http.proxy, remote URLs
        for i, word in args[1:]:
            if "://" in word or c.unresolved[i]:
                col.word(word, c.unresolved[i])
        for i, value in [
            (i, w) for i, w in args[2:3] if rx.search(r"proxy", args[1][1] if len(args) > 1 else "")
        ]:
            col.word(value, c.unresolved[i], bare=True)
        return
    if not args or args[0][1] not in GIT_NET and args[0][1] != "remote":
        return
    sub = args[0][1]
    rest = args[1:]
    if sub == "remote":
        if rest and rest[0][1] in ("add", "set-url"):
            for i, word in rest[2:3]:
                col.word(word, c.unresolved[i])
                col.remotes[rest[1][1]] = word
        return
    urls = [(i, w) for i, w in rest if "://" in w or SCP_LIKE.match(w) or c.unresolved[i]]
    for i, word in urls:
        col.word(word, c.unresolved[i])
    if urls or sub == "submodule":
        return
    remote = rest[0][1] if rest else "origin"
    known = col.remotes.get(remote) or col.facts.remotes.get(remote)
    if known is None:
        col.unresolved = True
    else:
        col.word(known, False)


def _ssh(col: _Collector, c: ShellCommand) -> None:
    for i, value in option_values(c.argv, frozenset({"-o"})):
        key, _, inner = value.partition("=") if "=" in value else value.partition(" ")
        if key.lower() == "proxycommand":
            shell_reach(read_shell(inner, c.cwd), col, inner)
        elif key.lower() == "proxyjump":
            col.word(inner.split(",")[0].strip() + ":", c.unresolved[i])
    for i, value in option_values(c.argv, frozenset({"-J"})):
        col.word(value.split(",")[0] + ":", c.unresolved[i])
    args = operands(c.argv, SSH_VALUES)
    targets = args[:1] if c.name == "ssh" else [(i, w) for i, w in args if ":" in w]
    for i, word in targets:
        if c.unresolved[i]:
            col.unresolved = True
        elif c.name == "ssh":
            col.hosts.add(normalize_host(word.split("@")[-1]))
        else:
            col.word(word, False)


def _pip(col: _Collector, c: ShellCommand, start: int = 1) -> None:
    argv = c.argv[start - 1 :]
    args = operands(
        argv, PIP_INDEX | frozenset({"-r", "--requirement", "-c", "--constraint", "-t", "--target"})
    )
    if args and args[0][1] == "config":
        for i, word in args[1:]:
            if "://" in word:
                col.word(word, c.unresolved[i + start - 1])
        return
    if not args or args[0][1] not in ("install", "download", "index", "wheel"):
        return
    explicit = option_values(argv, PIP_INDEX)
    for i, value in explicit:
        col.word(value, c.unresolved[i + start - 1])
    env = dict(c.env)
    if "PIP_INDEX_URL" in env:
        col.word(env["PIP_INDEX_URL"], False)
    elif (
        "--no-index" not in argv
        and not any(o[0] in ("-i", "--index-url") for o in _opt_names(argv))
        and not _local_only(argv, [w for _, w in args[1:]])
    ):
        col.registry("pypi.org")
    for i, word in args[1:]:
        if "://" in word:
            col.word(word.split("+", 1)[-1], c.unresolved[i + start - 1])


LOCAL_DISTRIBUTION = rx.compile(r"^(?:\.{1,2}(?:/|$)|/|~/)|\.(?:whl|tar\.gz|zip)$")


def _local_only(argv: tuple[str, ...], requirements: list[str]) -> bool:
    """`pip install --no-deps --no-build-isolation -e .`: local sources, no dependencies, and build
    requirements taken from the environment, so the index is never asked."""
    return (
        "--no-deps" in argv
        and "--no-build-isolation" in argv
        and bool(requirements)
        and all(LOCAL_DISTRIBUTION.search(w) for w in requirements)
    )


def _opt_names(argv: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(w.split("=", 1)[0] if w.startswith("--") else w[:2], w) for w in argv if w.startswith("-")]


def _npm(col: _Collector, c: ShellCommand) -> None:
    args = operands(c.argv, frozenset({"--registry", "--prefix", "-w", "--workspace"}))
    if args and args[0][1] in ("config", "set"):
        for i, word in args[1:]:
            if "://" in word:
                col.word(word, c.unresolved[i])
        return
    if not args or args[0][1] not in ("install", "i", "ci", "add", "update", "upgrade", "fetch"):
        return
    if "--offline" in c.argv:
        return
    explicit = option_values(c.argv, frozenset({"--registry"}))
    for i, value in explicit:
        col.word(value, c.unresolved[i])
    if not explicit:
        col.registry(REGISTRY[c.name])


def _go(col: _Collector, c: ShellCommand) -> None:
    args = operands(c.argv)
    if args and args[0][1] == "env":  # `go env -w GOPROXY=https://…`: every later go command uses it
        for i, word in args[1:]:
            if "://" in word:
                for part in rx.split(r"[,|]", word.split("=", 1)[-1]):
                    if "://" in part:
                        col.word(part, c.unresolved[i])
        return
    if not args or args[0][1] not in ("get", "install", "mod"):
        return
    if "GOPROXY" not in dict(c.env):
        col.registry("proxy.golang.org")
        return
    proxy = dict(c.env)["GOPROXY"]
    if proxy != "off":
        for part in rx.split(r"[,|]", proxy):
            if part not in ("direct", "off"):
                col.word(part, False)


def _resolver(col: _Collector, c: ShellCommand) -> None:
    for i, word in operands(c.argv, frozenset({"-p", "-t", "-c", "-q", "-type", "-port", "-w", "-W"})):
        if c.unresolved[i]:
            col.unresolved = True
        elif word.startswith("@"):
            col.hosts.add(normalize_host(word[1:]))
        elif c.name in ("nc", "ncat", "netcat", "telnet") and word.isdigit():
            continue
        elif BARE_HOST.match(word) or IPV4.fullmatch(word):
            col.hosts.add(normalize_host(word))


def _db(col: _Collector, c: ShellCommand) -> None:
    for i, value in option_values(c.argv, frozenset({"-h", "--host"})):
        col.word(value, c.unresolved[i], bare=True) if "://" in value else col.hosts.add(
            normalize_host(value)
        )


def _unresolvable(col: _Collector, c: ShellCommand) -> None:
    args = operands(c.argv)
    if args and args[0][1] in ("install", "update", "upgrade", "source", "download", "dist-upgrade"):
        col.unresolved = True


def _socat(col: _Collector, c: ShellCommand) -> None:
    """`socat A B`: an address `TCP:host:port` (or OPENSSL, UDP, …) is a host it connects to."""
    for i, word in enumerate(c.argv[1:], start=1):
        kind, _, rest = word.partition(":")
        if (
            kind.upper().rstrip("46") in ("TCP", "UDP", "OPENSSL", "SSL", "PROXY", "SOCKS", "SOCKS4A")
            and rest
        ):
            if c.unresolved[i]:
                col.unresolved = True
            elif "LISTEN" not in kind.upper():
                col.hosts.add(normalize_host(rest.split(",")[0].rsplit(":", 1)[0]))


def _docker(col: _Collector, c: ShellCommand) -> None:
    """`docker pull/run/build IMAGE`: the image's registry (its first part when it has a dot)."""
    args = operands(
        c.argv, frozenset({"-v", "-w", "-e", "-p", "--name", "-u", "--network", "--platform", "-f", "-t"})
    )
    if not args or args[0][1] not in ("pull", "run", "create", "push", "login"):
        return
    for i, image in args[1:2]:
        first = image.split("/", 1)[0]
        if args[0][1] in ("run", "create") and image in col.facts.local_images:
            continue  # an image the session built here: run from the machine, no registry reached
        if c.unresolved[i]:
            col.unresolved = True
        elif "." in first or ":" in first and "/" in image:
            col.hosts.add(normalize_host(first))
        else:
            col.registry("registry-1.docker.io")


def _cargo(col: _Collector, c: ShellCommand) -> None:
    args = operands(c.argv)
    if args and args[0][1] in ("install", "fetch", "add", "update", "search"):
        col.registry("crates.io")


HANDLERS = {
    "curl": _curl,
    "wget": _curl,
    "http": _curl,
    "https": _curl,
    "xh": _curl,
    "aria2c": _curl,
    "git": _git,
    "ssh": _ssh,
    "scp": _ssh,
    "sftp": _ssh,
    "rsync": _ssh,
    "sshfs": _ssh,
    "pip": _pip,
    "pip3": _pip,
    "npm": _npm,
    "yarn": _npm,
    "pnpm": _npm,
    "go": _go,
    "dig": _resolver,
    "nslookup": _resolver,
    "host": _resolver,
    "nc": _resolver,
    "ncat": _resolver,
    "netcat": _resolver,
    "telnet": _resolver,
    "ping": _resolver,
    "traceroute": _resolver,
    "mysql": _db,
    "psql": _db,
    "redis-cli": _db,
    "mongo": _db,
    "mongosh": _db,
    "apt": _unresolvable,
    "apt-get": _unresolvable,
    "apk": _unresolvable,
    "yum": _unresolvable,
    "dnf": _unresolvable,
    "brew": _unresolvable,
    "conda": _unresolvable,
    "cargo": _cargo,
    "socat": _socat,
    "docker": _docker,
    "podman": _docker,
}


def shell_reach(view: ShellView, col: _Collector, text: str) -> None:
    if not view.complete:
        hosts = {h for h in (url_host(m[0]) for m in URL.finditer(text)) if h}
        col.hosts |= hosts
        if NET_WORDS.search(text) and not hosts:
            col.unresolved = True
        return
    for command in view.commands:
        col.command(command)
