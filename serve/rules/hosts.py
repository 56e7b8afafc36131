"""Rule 2, hosts: every network host a call can reach must already have been named.

Known hosts are those in system, user or tool text before the call (`SessionFacts.hosts`)
or in the task's allowlist. A call's hosts are read from:

- URL arguments of fetch tools and unrecognised tools;
- shell commands (via `shellread`, so `bash -c` strings, `$(…)` and variables set earlier in
  the same command are followed): curl/wget option values (`--resolve`, `--connect-to`,
  `-x`), git remotes and URLs, ssh/scp/rsync `user@host:`, pip/npm/yarn/go/cargo registries
  (their defaults when none is given), dig/nslookup/nc/telnet/ping targets, database `-h`;
- program text run by interpreters (`python -c`, heredocs, `execute_code`): URLs, host and
  IP string literals, when the code calls a network API (a URL it only parses or prints
  reaches nothing), with concatenations folded (`derive`);
- proxies (`HTTPS_PROXY=…`, `wget -e https_proxy=…`, `ssh -o ProxyCommand/ProxyJump`),
  redirected indexes and remotes (`pip/npm config set`, `git config url.….insteadOf`), hosts
  written into network configuration (`pip.conf`, `.npmrc`, `.gitconfig`, `/etc/hosts`…), and
  `/dev/tcp/HOST/PORT`; `curl -K FILE` / `wget -i FILE` read URLs from a file: an unknown;
- offline package commands (`pip --no-index`, `npm --offline`) reach no registry.

A host that can't be resolved statically (an unset variable, `$(…)`, a named git remote whose
URL was never shown, a network API called with no literal address, an apt mirror) is an
unknown, and unknown blocks. Limits: hosts reached by redirects or by programs the agent
wrote to a file and runs later are not followed. Per-program argument reading lives in
`serve.rules.netcommands`; this module adds code, configuration files and the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .. import rx
from ..decisions import Reason, RuleId
from ..policy import Action
from .base import Finding, code_texts
from .facts import IPV4, LOCAL_SERVER, LOOPBACK
from .installs import installs_only_declared
from .netcommands import (
    PROXY_VARIABLE,
    UNRESOLVED_WORD,
    URL,
    _Collector,
    shell_reach,
    url_host,
)
from .netconfig import CONFIG_HOST, config_writes
from .permission import forbidden, granted
from .polarity import runs_project
from .shellread import read_shell

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .facts import SessionFacts

NET_API = rx.compile(
    r"\b(?:requests\.(?:get|post|put|patch|delete|head|options|request|Session)\b|urlopen\(|"
    r"urllib\.request\.|urllib2\.|urlretrieve\(|http\.client\.HTTPS?Connection|HTTPS?Connection\(|"
    r"httpx\.(?:get|post|put|patch|delete|head|request|stream|Client|AsyncClient)\b|aiohttp\.ClientSession|"
    r"create_connection\(|\.connect\(\s*\(|\.connect_ex\(|socket\.getaddrinfo\(|socket\.gethostbyname\(|"
    r"(?<![\w.])fetch\(|axios\b|XMLHttpRequest|https?\.(?:get|request)\(|net\.(?:connect|createConnection)\(|"
    r"LWP::|Net::HTTP|open-uri|wget\.download\(|pycurl|ftplib|smtplib|telnetlib|paramiko|"
    r"require\(\s*['\"](?:https?|net|tls|dgram|axios|node-fetch|got|request|undici)['\"]\s*\)|"
    r"\bfrom\s+['\"](?:https?|net|tls|axios|node-fetch|undici)['\"])"
)
DEV_NET = rx.compile(r"/dev/(?:tcp|udp)/([^/\s'\"]+)/")
STRING_HOST = rx.compile(
    r"""['"]((?:[a-z0-9-]+\.)+[a-z]{2,}|\d{1,3}(?:\.\d{1,3}){3}|localhost|[a-z][a-z0-9-]{0,62})['"]\s*,\s*\d{2,5}\b|"""
    r"""\b(?:host|hostname|server|address)['"]?\s*[:=]\s*['"]((?:[a-z0-9-]+\.)+[a-z]{2,}|\d{1,3}(?:\.\d{1,3}){3})['"]""",
    rx.I,
)


@dataclass(frozen=True, slots=True)
class Reach:
    """Hosts a call can reach, and whether some reach couldn't be resolved."""

    hosts: frozenset[str]
    unresolved: bool


def code_hosts(code: str) -> tuple[set[str], bool]:
    """Hosts program text reaches: those in its URLs and address literals when it calls a network API
    (a URL the code only parses, prints or joins reaches nothing; commands it runs are judged as
    shell calls of their own)."""
    if not NET_API.search(code):
        hosts = {
            h for h in (url_host(m[1]) for m in NET_CALL_URL.finditer(code)) if h and not RESERVED.search(h)
        }
        return hosts, False  # a URL given to the project's own fetch_page(...) or post_json(...)
    hosts = {h for h in (url_host(m[0]) for m in URL.finditer(code)) if h}
    hosts |= {(m[1] or m[2]).lower() for m in STRING_HOST.finditer(code)}
    hosts |= {m[1] for m in IPV4.finditer(code)}
    return hosts, not hosts


NET_CALL_URL = rx.compile(
    r"\b(?:[A-Za-z_]\w*\.)*(?:[a-z_]*_)?(?:post|get|put|patch|delete|fetch|request|download|upload|send|call|"
    r"connect|retrieve|crawl|scrape|ping|probe|hit|pull|push|sync|submit|webhook|notify|read_\w+|load\w*|"
    r"urlopen|open_url|from_url|imread|read_remote)(?:_\w+|[A-Z]\w*)?"
    r"\s*\(\s*(?:\w+\s*=\s*)?[rbf]?['\"](https?://[^'\"\s]+)['\"]",
    rx.I,
)
"""A URL literal given to a function whose name says it reaches the network (the project's ``post_json``,
``fetch_page``): with no network library in sight, the call is still what sends the request."""
RESERVED = rx.compile(r"(?:^|\.)(?:example\.(?:com|org|net)|test|example|invalid|localhost)$", rx.I)
"""Names reserved for examples and tests (RFC 2606): nothing is reached there."""


def config_hosts(call: NormalCall, facts: SessionFacts) -> set[str]:
    """Hosts written into network configuration files (pip.conf, .npmrc, .gitconfig, /etc/hosts…)."""
    out: set[str] = set()
    view = read_shell(call.command, facts.cwd) if call.command else None
    for path, content in config_writes(call, view, facts.cwd):
        out |= {h for h in (url_host(m[0]) for m in URL.finditer(content)) if h}
        out |= {m[1].lower() for m in CONFIG_HOST.finditer(content)}
        if path.endswith("hosts"):
            out |= {m[1] for m in IPV4.finditer(content)}
    return out


def reach(call: NormalCall, facts: SessionFacts) -> Reach:
    col = _Collector(facts)
    for url in (*call.urls,):
        col.word(url, False, bare=True)
    if call.command is not None:
        view = read_shell(call.command, facts.cwd)
        shell_reach(view, col, call.command)
        for key, value in view.variables:
            if PROXY_VARIABLE.match(key) and not key.lower().startswith("no_"):
                col.word(value, bool(UNRESOLVED_WORD.search(value)), bare=True)
            elif _remote_url(value):  # `RPC_URL=https://…`: what the tool it is set for reaches
                col.word(value, bool(UNRESOLVED_WORD.search(value)), bare=True)
        for command in view.commands:  # the same, set for one command only (`HEX_CDN=https://… rebar3 …`)
            for key, value in command.env:
                if _remote_url(value) and not PROXY_VARIABLE.match(key):
                    col.word(value, bool(UNRESOLVED_WORD.search(value)), bare=True)
            for word in command.argv[1:]:  # `--build-arg MIRROR=https://…`, `-D repo=https://…`: passed on
                value = word.partition("=")[2]
                if value and _remote_url(value):
                    col.word(value, bool(UNRESOLVED_WORD.search(value)), bare=True)
        col.hosts |= {m[1].lower() for m in DEV_NET.finditer(call.command)}
    for code in code_texts(call, facts):
        hosts, unresolved = code_hosts(code)
        col.hosts |= hosts
        col.unresolved |= unresolved
    col.hosts |= config_hosts(call, facts)
    return Reach(frozenset(h for h in col.hosts if h), col.unresolved)


URL_VALUE = rx.compile(r"^[a-z][a-z0-9+.-]*://[^\s/'\"]+")


def _remote_url(value: str) -> bool:
    """A variable's value that is a URL off this machine: the program it is set for connects there (a
    loopback URL is the agent's own service, judged as before)."""
    if not URL_VALUE.match(value):
        return False
    try:
        host = urlsplit(value).hostname or ""
    except ValueError:
        return True
    return host not in LOOPBACK and not host.startswith("127.")


# A call that starts a local server (then talks to it on the loopback address).
SERVER_START = rx.compile(
    LOCAL_SERVER.pattern + r"|\bserve\b|--bind\b|\bsocat\s+TCP[46]?-LISTEN|\bnc\s+-l|\bphp\s+-S\b|"
    r"(?<![&>|<0-9])&(?![&>])"  # a process put in the background, then talked to
)


DEFAULT_REGISTRIES = frozenset(
    {
        "pypi.org",
        "files.pythonhosted.org",
        "registry.npmjs.org",
        "registry.yarnpkg.com",
        "proxy.golang.org",
        "sum.golang.org",
        "crates.io",
        "index.crates.io",
        "static.crates.io",
        "rubygems.org",
    }
)
"""The package registries a package manager reaches by default: known for a call that installs only what
the project declares (``rules.installs``: ``npm ci``, ``pip install -r``, ``go mod tidy``), and for any
install once the user asked to set the project up, install, add or upgrade dependencies
(``serve.policy``); unless the user forbade installing or said the work is offline, or the conversation
says another registry is the one configured (then only that one is reachable)."""


def _default_registries(call: NormalCall, facts: SessionFacts) -> frozenset[str]:
    """The default registries this call may reach unnamed (see ``DEFAULT_REGISTRIES``); one the command
    names itself (``GOPROXY=https://proxy.golang.org``) is chosen, not the default."""
    if facts.registry_configured or facts.offline or forbidden(facts, None, Action.INSTALL_PROJECT):
        return frozenset()
    if not granted(facts, None, Action.INSTALL_PROJECT) and not (
        call.command
        and installs_only_declared(read_shell(call.command, facts.cwd), frozenset(facts.user_packages))
    ):
        return frozenset()
    written = f"{call.command or ''}\n{call.code or ''}"
    return frozenset(h for h in DEFAULT_REGISTRIES if h not in written)


NET_TOOLS = frozenset(
    "pip pip3 uv poetry pdm pipx conda mamba npm npx yarn pnpm bun deno cargo go git terraform tofu helm "
    "docker podman apt apt-get gem bundle composer mvn mvnw gradle gradlew dotnet nuget curl wget mix rebar3 "
    "cabal stack swift brew".split()
)
"""Programs that reach the hosts their configuration names (a mirror in .terraformrc, a proxy in .npmrc)."""


@dataclass(frozen=True)
class HostsRule:
    rule_id: RuleId = RuleId.HOSTS

    def judge(self, call: NormalCall, facts: SessionFacts) -> Finding | None:
        if not call.understood:
            return Finding(Reason.UNPARSABLE, unknown=True)
        found = reach(call, facts)
        starts_server = call.command is not None and SERVER_START.search(call.command) is not None
        registries = _default_registries(call, facts)
        if registries and any(not facts.host_known(h) for h in facts.manifest_hosts):
            return Finding(
                Reason.HOST_NOT_IN_CONVERSATION
            )  # an install reaches what a manifest it wrote names
        if any(
            not facts.host_known(h) and not (starts_server and h in LOOPBACK) and h not in registries
            for h in found.hosts
        ):
            return Finding(Reason.HOST_NOT_IN_CONVERSATION)
        if call.command and any(not facts.host_known(h) for h in facts.configured_hosts):
            commands = read_shell(call.command, facts.cwd).commands
            if any(c.name in NET_TOOLS for c in commands) or runs_project(
                [(c.name, *c.argv[1:]) for c in commands]
            ):
                return Finding(Reason.HOST_NOT_IN_CONVERSATION)  # through a mirror or proxy written earlier
        if found.unresolved and not call.ran:  # a file run with arguments: they are judged in the call
            return Finding(Reason.HOST_UNRESOLVABLE)
        return None
