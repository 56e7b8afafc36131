"""Run a harness inside a sandbox, with the guard as its only way out.

``launch_in_sandbox`` prepares the harness with the paths the sandbox sees (workspace ``/workspace``,
run folder ``/tmp/harness-run`` on the sandbox's private tmpfs, guard ``http://127.0.0.1:<port>``
through a ``Forward``), runs the rendered script with ``Sandbox.run``, copies the harness's own records
(session log, usage file) into the workspace only after the harness has ended, collects the workspace to
the host and moves those records out of it into ``run_dir``, so neither the agent nor the verifier ever
sees them. The harness installs (``.harnesses``, the Python the hermes venv was made from, and the
``node`` that runs pi) must be readable inside at their host paths: ``harness_binds()`` lists them for
``LocalBackend(extra_ro_binds=...)`` and ``DockerBackend(extra_ro_binds=...)`` alike.

``UnixToTcp`` is the host end of the forward for a guard that listens on TCP (``python -m serve``): it
listens on a unix socket and relays each connection to ``127.0.0.1:<port>``. Given the rollout's
``allowed_prefix`` (``/s/<rollout_id>/v1``) it is also the sandbox's route filter. The guard serves far more
than the harness needs (the rollout API that reads and closes records, other rollouts' routes, the model by
key, health), and anything inside the sandbox (a tool call's ``curl``) reaches whatever this relay lets
through. So per connection it reads the one request head, lets only ``POST <prefix>/chat/completions`` and
``GET <prefix>/models`` pass, answers everything else itself with a 403 (nothing reaches the guard), and
forwards the allowed request with ``Connection: close`` and exactly its ``Content-Length`` bytes of body:
the guard parses one request per connection, so nothing pipelined or smuggled behind it is ever parsed.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import select
import shutil
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit, urlunsplit

from environments.harnesses.base import (
    HarnessLauncher,
    LaunchResult,
    LaunchSpec,
    ProcessOutcome,
    install_root,
)
from environments.harnesses.route import rollout_path
from environments.sandboxes.relay import pump

if TYPE_CHECKING:
    from environments.sandboxes.protocol import Sandbox

INSIDE_WORKSPACE = Path("/workspace")
INSIDE_RUN = Path("/tmp/harness-run")
RECORDS = ".harness-run"
"""Where the harness's records wait in the workspace between the harness's end and ``collect``."""


def harness_binds(root: Path | None = None) -> tuple[Path, ...]:
    """Host paths a sandbox must bind read-only, at the same paths, to run the installed harnesses: the
    install root, the base Python of the hermes venv, and the ``node`` on this ``PATH`` (pi's bin is a
    ``#!/usr/bin/env node`` script and the launchers keep ``PATH``; a Docker image's own node may be
    too old). The node binary is bound as a file, so the image's other programs stay the image's."""
    root = (root or install_root()).resolve()
    binds = [root]
    cfg = root / "hermes-venv" / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":  # the base Python's bin folder; its prefix holds the stdlib
                binds.append(Path(value.strip()).resolve().parent)
    node = shutil.which("node")
    if node and (root / "pi").is_dir():
        binds.append(Path(os.path.abspath(node)))  # the path PATH finds, which `env node` will find inside
    return tuple(dict.fromkeys(binds))


def sandbox_script(launcher: HarnessLauncher, spec: LaunchSpec) -> str:
    """The bash script that runs ``spec`` (already in sandbox paths) and then keeps its records."""
    invocation = launcher.prepare(spec, INSIDE_RUN)
    keep = INSIDE_WORKSPACE / RECORDS
    return (
        invocation.shell_script() + f"rc=$?\nrm -rf {keep}; cp -a {INSIDE_RUN} {keep} 2>/dev/null\nexit $rc\n"
    )


def inside_url(base_url: str, forward_port: int) -> str:
    """The guard URL as the sandbox sees it: same path, host ``127.0.0.1:<forward_port>``."""
    parts = urlsplit(base_url)
    return urlunsplit(("http", f"127.0.0.1:{forward_port}", parts.path, parts.query, ""))


def launch_in_sandbox(
    launcher: HarnessLauncher,
    spec: LaunchSpec,
    sandbox: Sandbox,
    *,
    forward_port: int,
    run_dir: Path,
    collect_to: Path,
) -> LaunchResult:
    """Run ``spec`` (host paths and the host's guard URL) in ``sandbox``, which must have been created
    from ``spec.workspace`` with ``Forward(forward_port, <socket relayed to the guard>)``. The workspace
    as the harness left it is collected to ``collect_to``; the harness's records end up in ``run_dir``.

    The records passed through the agent's sandbox, so the host reads them as untrusted: a records folder
    that is a link is not taken, links and special files inside it are removed (a usage file linked to
    ``/dev/zero`` would otherwise be read forever), and a launcher that cannot read what is left gives a
    result with ``records_problem`` set instead of raising."""
    inside = replace(spec, workspace=INSIDE_WORKSPACE, base_url=inside_url(spec.base_url, forward_port))
    run = sandbox.run(sandbox_script(launcher, inside), timeout_s=spec.timeout_s)
    collected = sandbox.collect(Path(collect_to))
    run_dir = Path(run_dir)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    records = collected / RECORDS
    if records.is_dir() and not records.is_symlink():
        shutil.move(records, run_dir)
        removed = keep_plain_records(run_dir)
    else:
        if records.is_symlink() or records.exists():
            records.unlink()
        run_dir.mkdir(parents=True)
        removed = 0
    outcome = ProcessOutcome(run.exit_code, run.timed_out, run.wall_s, run.output_tail, "")
    try:
        result = launcher.finish(inside, run_dir, outcome)
    except Exception as exc:  # malformed records (the agent can write them): a result, never a crash
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        return LaunchResult(
            launcher.name, run.exit_code, run.timed_out, run.wall_s, run.output_tail, "", records_problem=why
        )
    if removed and not result.records_problem:
        result = replace(result, records_problem=f"{removed} links or special files in the records")
    return result


MAX_RECORD_ENTRIES = 10_000
"""Entries of a records folder the host walks; the rest is removed unread."""


def keep_plain_records(root: Path) -> int:
    """Remove every link and special file under ``root`` (never followed), and everything past
    ``MAX_RECORD_ENTRIES``; return how many entries were removed."""
    removed, seen, todo = 0, 0, [root]
    while todo:
        folder = todo.pop()
        for entry in list(os.scandir(folder)):
            seen += 1
            if seen > MAX_RECORD_ENTRIES or entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed += 1
            elif entry.is_dir(follow_symlinks=False):
                todo.append(Path(entry.path))
    return removed


# -- the sandbox's route filter: pure parts ------------------------------------------------------------

HEAD_LIMIT = 64 * 1024
"""The largest request head (request line and headers) the relay reads; the harnesses send under 1 KiB."""
HEAD_DEADLINE_S = 10.0
"""How long a new connection may take to send its whole head; the harnesses send it at once."""
ALLOWED_ROUTES = (("POST", "/chat/completions"), ("GET", "/models"))
"""The only requests a harness makes that need the guard, relative to its rollout's prefix. Hermes also
probes ``GET /s/<id>/api/v1/models``, ``/api/tags``, ``/v1/props``, ``/props`` and ``/version`` (server-type
detection); it only acts on a 200, the guard answers them 404, so refusing them changes nothing for it."""
DROPPED_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "upgrade", "http2-settings"})
"""Removed before the relay adds its own ``Connection: close``. ``Upgrade`` too: no harness upgrades, and
an upgraded connection would carry more than the one request the filter read."""
REFUSAL_BODY = {
    "error": {"code": "route_not_allowed", "message": "this sandbox may only call its own chat route"}
}
"""The one body every refusal gets, whatever the reason (the reason is counted on the relay, not told)."""

_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
_REQUEST_LINE = re.compile(r"([A-Z]{1,16}) ([\x21-\x7e]+) (HTTP/1\.[01])")
_HEADER = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([\x20-\x7e\t]*?)[ \t]*")
_DIGITS = re.compile(r"[0-9]{1,15}")
_CHUNK = 65536
_GRACE_S = 2.0
"""How long the relay keeps reading (and dropping) client bytes after its response went out."""


class HeadError(ValueError):
    """A request head the relay will not forward; ``reason`` is a fixed code for counting."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]

    def values(self, name: str) -> tuple[str, ...]:
        name = name.lower()
        return tuple(value for key, value in self.headers if key.lower() == name)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    """``allowed``, or why not: ``own_rollout_route`` (another path under the rollout's own ``/s/<id>/``:
    what hermes's server-type probes look like), ``route_not_allowed`` (everything else: the rollout API,
    other rollouts, the key and health routes, odd targets), ``transfer_encoding`` or ``content_length``
    (a body the relay could not frame exactly)."""
    body_length: int = 0


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is a plain absolute path (unreserved characters, no dot segments, no trailing
    slash), so that the allowed targets need no encoding and can be compared byte for byte."""
    segments = prefix.split("/")
    plain = all(_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments[1:])
    if segments[0] or len(segments) < 2 or not plain:
        raise ValueError(f"allowed_prefix={prefix!r}: must be a path like {rollout_path('<rollout_id>')}")
    return prefix


def parse_head(raw: bytes) -> RequestHead:
    """Parse a request head (with or without its closing blank line) strictly: printable ASCII, CRLF line
    ends only, no folded header lines. A head a lenient server might read differently (bare LF or CR,
    obs-fold, control bytes) is refused rather than guessed at, so the relay and the guard always agree
    on where the head ends and what it asks for."""
    try:
        text = raw.removesuffix(b"\r\n\r\n").decode("ascii")
    except UnicodeDecodeError:
        raise HeadError("head_not_ascii") from None
    lines = text.split("\r\n")
    if any("\r" in line or "\n" in line for line in lines):
        raise HeadError("bare_line_break")
    request = _REQUEST_LINE.fullmatch(lines[0])
    if request is None:
        raise HeadError("request_line_invalid")
    headers = []
    for line in lines[1:]:
        field = _HEADER.fullmatch(line)
        if field is None:
            raise HeadError("header_invalid")
        headers.append((field[1], field[2]))
    return RequestHead(request[1], request[2], request[3], tuple(headers))


def normalise_path(path: str) -> str:
    """``path`` percent-decoded, dot segments resolved and repeated slashes merged: the most a server
    could make of it before routing. Raises ``UnicodeDecodeError`` for escapes that are not UTF-8."""
    normal = posixpath.normpath(unquote(path, errors="strict"))
    return re.sub("/{2,}", "/", normal)


def target_path(target: str) -> str | None:
    """The path of an origin-form target (``/path?query``) when the path already is its own normal form,
    else None: absolute-form (``http://host/...``), authority-form, ``*``, fragments, and paths with
    ``..``, ``.``, ``//``, a trailing slash or any percent escape (``%2e%2e``, ``%2f``) never get compared."""
    if not target.startswith("/") or "#" in target:
        return None
    path = target.partition("?")[0]
    try:
        return path if normalise_path(path) == path else None
    except UnicodeDecodeError:
        return None


def decide(head: RequestHead, prefix: str) -> Decision:
    """Whether the relay forwards ``head`` for the rollout at ``prefix``, and how many body bytes follow
    it. Only the two routes pass, and only with a body framed by at most one ``Content-Length``: a chunked
    body would need the relay to parse chunks to know where the request ends."""
    path = target_path(head.target)
    if path is None or (head.method, path) not in {(m, prefix + p) for m, p in ALLOWED_ROUTES}:
        root = posixpath.dirname(prefix)
        inside = path is not None and root != "/" and path.startswith(root + "/")
        return Decision(False, "own_rollout_route" if inside else "route_not_allowed")
    if head.values("transfer-encoding"):
        return Decision(False, "transfer_encoding")
    lengths = head.values("content-length")
    if len(lengths) > 1 or (lengths and not _DIGITS.fullmatch(lengths[0])):
        return Decision(False, "content_length")
    return Decision(True, "allowed", int(lengths[0]) if lengths else 0)


def forwarded_head(head: RequestHead) -> bytes:
    """``head`` as the relay sends it on: connection-scoped headers removed and ``Connection: close``
    added, so the guard answers this one request and then closes (no keep-alive, no pipelining)."""
    kept = [f"{name}: {value}" for name, value in head.headers if name.lower() not in DROPPED_HEADERS]
    lines = [f"{head.method} {head.target} {head.version}", *kept, "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def json_response(status: str, body: dict) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + data


REFUSAL = json_response("403 Forbidden", REFUSAL_BODY)
UNAVAILABLE = json_response(
    "502 Bad Gateway", {"error": {"code": "guard_unavailable", "message": "the guard could not be reached"}}
)


# -- the relay -----------------------------------------------------------------------------------------


class UnixToTcp:
    """Listen on the unix socket ``path`` and relay every connection to ``host:port`` (threads).

    With ``allowed_prefix`` (``/s/<rollout_id>/v1``, what the guard's ``open`` returned) each connection
    carries exactly one request, and only the rollout's own chat and models routes (module docstring);
    ``refused`` counts the requests answered with a 403 instead and ``refusals`` counts them by reason.
    Without it the relay copies bytes unread, as it always did: only for callers that trust the client."""

    def __init__(
        self,
        path: Path,
        port: int,
        host: str = "127.0.0.1",
        *,
        allowed_prefix: str | None = None,
        head_deadline_s: float = HEAD_DEADLINE_S,
    ) -> None:
        self.path, self.target = Path(path), (host, port)
        self.allowed_prefix = None if allowed_prefix is None else check_prefix(allowed_prefix)
        self.head_deadline_s = head_deadline_s
        self.refusals: Counter[str] = Counter()
        self.guard_unreachable = 0
        """Allowed requests the relay could not connect to the guard for (answered 502): a host-side
        failure the rollout can prove, unlike anything the sandbox reports about itself."""
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self.path.chmod(0o666)  # the sandbox's uid must be able to connect
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def refused(self) -> int:
        """Requests answered with the 403 (nothing of them reached the guard)."""
        with self._lock:
            return sum(self.refusals.values())

    @property
    def refused_outside(self) -> int:
        """Refused requests aimed outside the rollout's own ``/s/<id>/`` (the rollout API, other rollouts,
        the key and health routes) or not parseable as one plain request: no harness sends these, so each
        one is something in the sandbox (a tool call) trying to get past the relay. Hermes alone makes 10
        ``own_rollout_route`` refusals a run (its server-type probes), which this leaves out."""
        with self._lock:
            return sum(n for reason, n in self.refusals.items() if reason != "own_rollout_route")

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            if self.allowed_prefix is None:
                upstream = self._connect()
                if upstream is not None:
                    _connection(client, upstream)
            else:
                self._serve_one(client, self.allowed_prefix)
        finally:
            client.close()

    def _serve_one(self, client: socket.socket, prefix: str) -> None:
        try:
            raw, early = read_head(client, self.head_deadline_s)
            head = parse_head(raw)
        except HeadError as exc:
            if exc.reason != "no_request":  # a connection closed before any byte asked for nothing
                self._refuse(client, exc.reason)
            return
        decision = decide(head, prefix)
        if not decision.allowed:
            self._refuse(client, decision.reason)
            return
        upstream = self._connect()
        if upstream is None:
            with self._lock:
                self.guard_unreachable += 1
            _answer(client, UNAVAILABLE)
            return
        _relay_one(client, upstream, forwarded_head(head), early, decision.body_length)

    def _refuse(self, client: socket.socket, reason: str) -> None:
        with self._lock:
            self.refusals[reason] += 1
        _answer(client, REFUSAL)

    def _connect(self) -> socket.socket | None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            return None
        upstream.settimeout(None)
        return upstream

    def close(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> UnixToTcp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connection(client: socket.socket, upstream: socket.socket) -> None:
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def read_head(sock: socket.socket, deadline_s: float = HEAD_DEADLINE_S) -> tuple[bytes, bytes]:
    """Read up to and including the blank line that ends the request head; return it and the bytes that
    arrived after it. ``HeadError``: ``no_request`` (closed before any byte), ``head_incomplete``,
    ``head_timeout`` (not all there within ``deadline_s``), ``head_too_large`` (over ``HEAD_LIMIT``)."""
    buf = bytearray()
    end = time.monotonic() + deadline_s
    try:
        while (cut := buf.find(b"\r\n\r\n")) < 0:
            if len(buf) > HEAD_LIMIT:
                raise HeadError("head_too_large")
            left = end - time.monotonic()
            if left <= 0:
                raise HeadError("head_timeout")
            sock.settimeout(left)
            try:
                data = sock.recv(_CHUNK)
            except TimeoutError:
                raise HeadError("head_timeout") from None
            except OSError:
                data = b""
            if not data:
                raise HeadError("head_incomplete" if buf else "no_request")
            buf += data
    finally:
        sock.settimeout(None)
    if cut + 4 > HEAD_LIMIT:
        raise HeadError("head_too_large")
    return bytes(buf[: cut + 4]), bytes(buf[cut + 4 :])


def _readable(sock: socket.socket, timeout_s: float) -> bool:
    """``poll`` rather than ``select``: a Ray worker's socket numbers can pass select's 1024."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def _drain(sock: socket.socket, until: float, budget: int = 1 << 20) -> bool:
    """Read and drop what ``sock`` sends until it closes (True), or ``until`` passes or ``budget`` bytes
    were dropped (False)."""
    while (left := until - time.monotonic()) > 0 and budget > 0:
        if not _readable(sock, min(left, 0.2)):
            continue
        try:
            data = sock.recv(_CHUNK)
        except OSError:
            return True
        if not data:
            return True
        budget -= len(data)
    return False


def _answer(client: socket.socket, response: bytes) -> None:
    """Send the relay's own complete response, then drop what the client still sends for a moment before
    the caller closes: closing with unread bytes makes the kernel send a reset, which can destroy the
    response before the client has read it."""
    try:
        client.sendall(response)
        client.shutdown(socket.SHUT_WR)
    except OSError:
        return
    _drain(client, time.monotonic() + 1.0)


def _relay_one(client: socket.socket, upstream: socket.socket, head: bytes, early: bytes, size: int) -> None:
    """Send ``head`` and exactly ``size`` body bytes (``early`` first: what came with the head) to the
    guard and relay its response back as it streams. Client bytes past the body (a pipelined request, a
    smuggled one) are read and dropped, never forwarded. When the client closes first, the guard sees the
    close, as it did before the filter."""
    done = threading.Event()

    def back() -> None:
        pump(upstream, client)
        done.set()

    thread = threading.Thread(target=back, daemon=True)
    thread.start()
    try:
        upstream.sendall(head + early[:size])
        closed_first = _upload(client, upstream, size - len(early[:size]), done)
    except OSError:
        closed_first = True
    if closed_first:
        try:
            upstream.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    thread.join()
    upstream.close()


def _upload(client: socket.socket, upstream: socket.socket, left: int, done: threading.Event) -> bool:
    """Forward the ``left`` body bytes still to come and drop any others, until the client closes (True)
    or the response is through (``done``); then drop for ``_GRACE_S`` more while the client reads (False)."""
    while not done.is_set():
        if not _readable(client, 0.2):
            continue
        data = client.recv(_CHUNK)
        if not data:
            return True
        if left > 0:
            upstream.sendall(data[:left])
            left -= min(left, len(data))
    _drain(client, time.monotonic() + _GRACE_S)
    return False
