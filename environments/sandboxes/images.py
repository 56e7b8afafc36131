"""Task images: a task's own Dockerfile built once per content digest, then made into a sandbox image.

Two builds per task image (``network`` is the build's: the Docker backend builds with the host's, as
Harbor does, so a Dockerfile's ``RUN pip install`` reaches the registries this machine reaches; sandboxes
always run with none):

1. the task's build context as the task wrote it, tagged ``<TASK_REPO>:<digest>-task``; no image is
   pulled: a ``FROM`` image the engine lacks is replaced by a local stand-in where there is one
   (``bases.py``: ``python:3.11*``, ``debian:bookworm*``), else the error names it and the fix; with
   network, each stage trusts the host's CA bundle (``bases.with_host_trust``);
2. a sandbox layer over it (tagged by a hash of the digest and the layer): the work directory's files move
   to ``/workspace``, owned by the sandbox user, and the work directory becomes a link to it, so the
   task's absolute paths and our workspace are one folder; ``/run/forward`` is made for the guard's relay;
   ``/root`` is made traversable, as in the shared image, for harness interpreters bound from there.

A tag that exists is reused (the cache survives restarts: it is the engine's). A failed build is one
task's error (``TaskImageError`` with the build log's tail), remembered so it is not retried by every
rollout; other tasks go on. Concurrent callers of the same digest wait for one build.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
import time
from collections.abc import Callable
from typing import Any

from environments.core.placement import SANDBOX_WORKSPACE, TaskImage
from environments.sandboxes import bases
from environments.sandboxes.protocol import SandboxError

TASK_REPO = "harness-adapters/task"
SANDBOX_UID = 1000
_LOG_TAIL_LINES = 12

_LAYER = """FROM {base}
USER root
RUN set -e; W='{workdir}'; mkdir -p /workspace /run/forward; \\
    if [ "$W" != /workspace ]; then \\
      if [ -d "$W" ] && [ ! -L "$W" ]; then cp -a "$W/." /workspace/ && rm -rf "$W"; fi; \\
      mkdir -p "$(dirname "$W")" && ln -sfn /workspace "$W"; \\
    fi; \\
    chown -R {uid}:{uid} /workspace; \\
    if [ -d /root ]; then chmod 0755 /root; fi
USER {uid}:{uid}
WORKDIR /workspace
CMD ["sleep", "infinity"]
"""


class TaskImageError(SandboxError):
    """One task's image could not be built; the message has the reason and the build log's tail."""


def context_tar(files: dict[str, bytes]) -> bytes:
    """A build context as an uncompressed tar (what the engine's build endpoint reads)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o755 if data.startswith(b"#!") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def layer_dockerfile(base: str, workdir: str) -> str:
    """The sandbox layer over a built task image whose ``WORKDIR`` is ``workdir``."""
    if "'" in workdir:
        raise ValueError(f"workdir={workdir!r}: quotes are not supported in the work directory")
    return _LAYER.format(base=base, workdir=workdir, uid=SANDBOX_UID)


def _log_tail(exc: BaseException) -> str:
    lines: list[str] = []
    for chunk in getattr(exc, "build_log", None) or ():
        text = (chunk.get("stream") or chunk.get("error") or "") if isinstance(chunk, dict) else str(chunk)
        lines += [line for line in str(text).splitlines() if line.strip()]
    return " | ".join(lines[-_LOG_TAIL_LINES:])


class TaskImages:
    """Builds and caches task images on one engine (the ``DockerAPI`` slice ``images.build``/``get``)."""

    def __init__(self, api: Any, *, network: str = "none", log: Callable[[str], None] | None = None) -> None:
        self.api, self.network = api, network
        self.log = log or (lambda line: print(line, flush=True))
        self.failed: dict[str, str] = {}
        self.built: dict[str, float] = {}
        """Seconds each digest's build took in this process (a cached tag is not listed)."""
        self._lock = threading.Lock()
        self._per_digest: dict[str, threading.Lock] = {}

    @staticmethod
    def task_tag(image: TaskImage) -> str:
        """The task's own build: keyed by its context alone."""
        return f"{TASK_REPO}:{image.digest[:24]}-task"

    @staticmethod
    def tag(image: TaskImage, workdir: str = SANDBOX_WORKSPACE) -> str:
        """The sandbox image: keyed by the context and the layer over it (a changed layer is rebuilt)."""
        layer = layer_dockerfile("", workdir).encode()
        return f"{TASK_REPO}:{hashlib.sha256(image.digest.encode() + layer).hexdigest()[:24]}"

    def ensure(self, image: TaskImage, workdir: str = SANDBOX_WORKSPACE) -> str:
        """The sandbox image's tag for ``image``, built now if the engine lacks it; raise
        ``TaskImageError`` (the same one again for a digest that failed before)."""
        tag, task_id = self.tag(image, workdir), image.task_id
        with self._lock:
            lock = self._per_digest.setdefault(image.digest, threading.Lock())
        with lock:
            if image.digest in self.failed:
                raise TaskImageError(self.failed[image.digest])
            if self.exists(tag):
                return tag
            who = f"task {task_id}" if task_id else f"image {image.digest[:12]}"
            self.log(f"building the image of {who} as {tag} ({image.reason}) ...")
            start = time.monotonic()
            try:
                if not self.exists(self.task_tag(image)):
                    context = self._with_host_trust(self._with_stand_ins(image.context, who))
                    self._build(context_tar(context), self.task_tag(image))
                layer = {"Dockerfile": layer_dockerfile(self.task_tag(image), workdir).encode()}
                self._build(context_tar(layer), tag)
            except TaskImageError as exc:
                self.failed[image.digest] = str(exc)
                self.log(f"image of {who} failed: {exc}")
                raise
            except Exception as exc:
                tail = _log_tail(exc)
                message = (
                    f"{who}: its Dockerfile did not build ({type(exc).__name__}: {exc})"
                    + (f"; log: {tail}" if tail else "")
                    + f"; the build runs with network={self.network!r}"
                )
                self.failed[image.digest] = message
                self.log(f"image of {who} failed: {message}")
                raise TaskImageError(message) from exc
            self.built[image.digest] = time.monotonic() - start
            self.log(f"built {tag} for {who} in {self.built[image.digest]:.1f} s")
            return tag

    def _with_stand_ins(self, context: dict[str, bytes], who: str) -> dict[str, bytes]:
        """The build context with each ``FROM`` image the engine lacks replaced by its local stand-in
        (built once from the Debian base); ``TaskImageError`` names those that have none."""
        dockerfile = context["Dockerfile"].decode("utf-8", "replace")
        base = self.lookup(bases.DEBIAN_BASE)
        replaced, missing = {}, []
        for ref in bases.from_images(dockerfile):
            if self.exists(ref):
                continue
            kind = bases.stand_in_kind(ref) if base is not None else None
            if kind is None:
                missing.append(ref)
                continue
            stand_in = bases.stand_in_tag(kind, str(getattr(base, "id", base)))
            if not self.exists(stand_in):  # a failed build raises: the tag exists after it
                self.log(f"{ref} is not in the engine: building its stand-in {stand_in}")
                self._build(context_tar({"Dockerfile": bases.stand_in_dockerfile(kind).encode()}), stand_in)
            replaced[ref] = stand_in
        if missing:
            raise TaskImageError(f"{who}: {bases.missing_message(missing)}")
        if not replaced:
            return context
        self.log(f"{who}: FROM {', '.join(f'{a} -> {b}' for a, b in replaced.items())} (no registry here)")
        return {**context, "Dockerfile": bases.with_images(dockerfile, replaced).encode()}

    def _with_host_trust(self, context: dict[str, bytes]) -> dict[str, bytes]:
        """With network, the context with the host's CA bundle and every stage trusting it; without, as is
        (nothing is fetched)."""
        bundle = bases.host_ca_bundle() if self.network != "none" else None
        if bundle is None:
            return context
        dockerfile = bases.with_host_trust(context["Dockerfile"].decode("utf-8", "replace"))
        return {**context, bases.HOST_CA: bundle, "Dockerfile": dockerfile.encode()}

    def _build(self, context: bytes, tag: str) -> None:
        self.api.images.build(
            fileobj=io.BytesIO(context),
            custom_context=True,
            tag=tag,
            pull=False,
            rm=True,
            forcerm=True,
            network_mode=self.network,
        )

    def exists(self, tag: str) -> bool:
        return self.lookup(tag) is not None

    def lookup(self, tag: str) -> Any | None:
        """The engine's image ``tag``, or None when the engine has none by that name."""
        try:
            return self.api.images.get(tag)
        except Exception as exc:  # docker.errors.ImageNotFound; anything else is the engine's problem
            if "not found" in str(exc).lower() or "404" in str(exc) or type(exc).__name__ == "ImageNotFound":
                return None
            raise SandboxError(f"could not look up image {tag}: {exc}") from exc
