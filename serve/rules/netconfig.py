"""Network configuration a call writes: files whose contents point a tool at a host (pip.conf, .npmrc,
.gitconfig, a .terraformrc mirror, /etc/hosts). A host written there is reached later, by the tools that
read the file; the hosts rule judges it as the call writes it, and the session keeps it for later runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import rx
from .shellwords import resolve

if TYPE_CHECKING:
    from ..normalize import NormalCall
    from .shellread import ShellView

NET_CONFIG = rx.compile(
    r"(?:^|/)(?:pip\.conf|pip\.ini|\.npmrc|\.yarnrc(?:\.yml)?|\.gitconfig|\.git/config|\.curlrc|\.wgetrc|"
    r"\.ssh/config|\.condarc|\.pypirc|uv\.toml|poetry\.toml|\.netrc|\.bunfig\.toml|bunfig\.toml|"
    r"\.cargo/config(?:\.toml)?|\.docker/config\.json|\.m2/settings\.xml|gradle\.properties|\.terraformrc|terraform\.rc|"
    r"\.gemrc|\.bundle/config|\.bazelrc|\.config/pip/pip\.conf|\.config/uv/uv\.toml|\.gradle/init\.gradle)$|"
    r"^/etc/(?:hosts|resolv\.conf|environment|apt/sources\.list(?:\.d/.*)?|pip\.conf|profile\.d/.*|"
    r"gitconfig|wgetrc|npmrc)$"
)
CONFIG_HOST = rx.compile(
    r"(?:proxy|registry|index[-_]url|extra[-_]index[-_]url|url|host(?:name)?|server|mirror|insteadof|"
    r"proxycommand)\s*[=:]?\s*['\"]?([a-z0-9][\w.-]*\.[a-z]{2,}|\d{1,3}(?:\.\d{1,3}){3})",
    rx.I,
)


def config_writes(call: NormalCall, view: ShellView | None, cwd: str | None) -> list[tuple[str, str]]:
    """(path, text) of every network configuration file ``call`` writes: whole writes, edits, and shell
    redirections (whose text is the command and its heredoc bodies); ``view`` is the call's shell reading."""
    written = [*call.writes, *((e.path, e.new) for e in call.edits)]
    if view is not None:
        text = "\n".join(view.bodies) + "\n" + (call.command or "")
        written += [(p, text) for c in view.commands for p in c.writes]
    return [(path, text) for path, text in written if NET_CONFIG.search(resolve(path, cwd))]
