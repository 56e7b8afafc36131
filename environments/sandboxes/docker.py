"""The Docker sandbox: one container per sandbox on a local image, no network, over a narrow API.

Threat model (beside the local backend's, see ``local.py``): a container with ``network_mode="none"``
(loopback only), all capabilities dropped, ``no-new-privileges``, uid 1000, an init as pid 1, and cgroup
limits on memory (swap included), pids and CPU set by the engine. The workspace goes in and comes out as
tar archives. The host paths mounted are a ``Forward``'s unix socket (relayed to ``127.0.0.1:<port>``
inside) and the backend's ``extra_ro_binds``: host files and folders bound read-only at the same paths
(the harness installs, the Python and node they run on; see ``harnesses.sandboxed.harness_binds``), which
the agent can read and run but not change. It does not stop kernel exploits (shared kernel), reads of
what the image and those binds hold (build the image from the Dockerfile here only; bind only public
software, never a folder holding tasks, answers or credentials), or an engine misconfigured to allow
more. Bound binaries run on the image's libraries, so build its base from the host's distribution release.
Per-command time limits use ``timeout`` inside the container, which kills the command's process group;
after each command every other process of the sandbox user is killed too (``_SWEEP``: all but the init
and its idle keeper, the oldest process, started before any run), so a ``setsid`` daemon cannot
outlive its run and change the workspace between the agent's run and its collection. Containers are
labelled with the prefix and owner, so ``sweep`` removes a crashed launcher's containers.

Only the calls in ``DockerAPI`` are used (``docker.from_env()`` satisfies it; tests pass a fake):
``containers.run``, ``containers.list``, a container's ``put_archive``, ``exec_run``, ``get_archive``,
``stats`` and ``remove``, and ``images.build``/``get`` for the images. No image is pulled: ``build_image``
builds ``IMAGE_TAG`` from ``docker/Dockerfile`` over a base image imported locally (see that file), and a
task that needs its own image gets it from ``images.TaskImages`` (built once per content digest). A task's
mounts (``Placement``) are private host folders bound at their targets, so the engine must run on this host.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from environments.core.placement import Placement
from environments.core.runner import RunResult
from environments.integrity.snapshot import MAX_FILE_BYTES, copy_tree
from environments.sandboxes.bases import DEBIAN_BASE
from environments.sandboxes.images import TaskImages
from environments.sandboxes.protocol import (
    DEFAULT_PREFIX,
    RELAY_SCRIPT,
    Forward,
    PlacedMounts,
    SandboxError,
    SandboxLimits,
    command_argv,
    new_name,
    owner_alive,
)

IMAGE_TAG = "harness-adapters/sandbox:latest"
DOCKERFILE_DIR = Path(__file__).parent / "docker"
PREFIX_LABEL = "harness-adapters.sandbox.prefix"
HOST_LABEL = "harness-adapters.sandbox.host"
WORKSPACE = "/workspace"
SANDBOX_UID = 1000
_TAIL_BYTES = 4000
_HELPERS = 2  # docker-init and the idle keeper process
_TIMEOUT_EXIT_CODES = (124, 137)
_OWN_PATHS = (WORKSPACE, "/tmp", "/run/forward")
_SWEEP = (
    # The keeper is the oldest process but the init: least start time (field 22 of stat, read after the
    # last ")" so a crafted name cannot shift it), then least pid. Stop, then kill, every process but the
    # init, the keeper and this shell, until a pass finds none; bash builtins only, so nothing forks.
    "keep=; best=; for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] && continue; "
    'read -r s < "$d/stat" 2>/dev/null || continue; f=(${s##*\\) }); t=${f[19]}; '
    'if [ -z "$best" ] || [ "$t" -lt "$best" ] || { [ "$t" = "$best" ] && [ "$p" -lt "$keep" ]; }; '
    "then best=$t; keep=$p; fi; done; "
    "for _ in 1 2 3 4 5; do found=0; for signal in STOP KILL; do for d in /proc/[0-9]*; do p=${d#/proc/}; "
    'case " 1 $keep $$ " in *" $p "*) ;; *) kill -s $signal "$p" 2>/dev/null && found=1;; esac; done; done; '
    '[ "$found" = 0 ] && break; done; exit 0'
)
"""Run as the sandbox user after every command: what the command left running dies with it."""


class ContainerAPI(Protocol):
    """The container methods used (``docker.models.containers.Container``)."""

    name: str
    labels: dict[str, str]

    def put_archive(self, path: str, data: bytes) -> bool: ...

    def exec_run(self, cmd: list[str], *, workdir: str, environment: dict[str, str], user: str) -> Any:
        """Returns ``(exit_code, output_bytes)`` (docker's ``ExecResult``)."""
        ...

    def get_archive(self, path: str) -> tuple[Iterable[bytes], dict[str, Any]]: ...

    def stats(self, *, stream: bool, one_shot: bool) -> dict[str, Any]: ...

    def remove(self, *, force: bool) -> None: ...


class ContainersAPI(Protocol):
    def run(self, image: str, command: list[str], **kwargs: Any) -> ContainerAPI: ...

    def list(self, *, all: bool, filters: dict[str, Any]) -> list[ContainerAPI]: ...


class ImagesAPI(Protocol):
    def build(self, **kwargs: Any) -> Any: ...

    def get(self, name: str) -> Any:
        """Raises ``docker.errors.ImageNotFound`` when the engine has no such image."""
        ...


class DockerAPI(Protocol):
    """The slice of ``docker.DockerClient`` the backend uses."""

    containers: ContainersAPI
    images: ImagesAPI


def connect() -> DockerAPI:
    """The real client from the environment (``DOCKER_HOST``), imported only when needed."""
    import docker

    try:
        return docker.from_env()
    except docker.errors.DockerException as exc:
        raise SandboxError(
            "no Docker engine: start one (dockerd --host unix://SOCK ...) and set DOCKER_HOST=unix://SOCK"
        ) from exc


def build_image(api: DockerAPI, *, tag: str = IMAGE_TAG, base: str | None = None) -> str:
    """Build the sandbox image from ``docker/Dockerfile`` offline; ``base`` overrides its ``BASE`` arg."""
    buildargs = {"BASE": base} if base else {}
    api.images.build(
        path=str(DOCKERFILE_DIR), tag=tag, buildargs=buildargs, pull=False, rm=True, network_mode="none"
    )
    return tag


def workspace_tar(folder: Path) -> bytes:
    """``folder``'s contents as a tar whose entries belong to the sandbox user (so it can write them)."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = SANDBOX_UID
        info.uname = info.gname = ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for child in sorted(Path(folder).iterdir()):
            tar.add(child, arcname=child.name, filter=owned)
    return buffer.getvalue()


def relay_tar() -> bytes:
    """``relay.py`` as a tar for ``/run/forward`` (read-only for the sandbox user)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tar.gettarinfo(str(RELAY_SCRIPT), arcname="relay.py")
        info.uid = info.gid = 0
        info.mode = 0o644
        with RELAY_SCRIPT.open("rb") as data:
            tar.addfile(info, data)
    return buffer.getvalue()


class _ChunkStream(io.RawIOBase):
    """The archive's chunks as a file, read in order and never held whole (a sparse 4 GB file comes out of
    ``get_archive`` as 4 GB of zeros)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def extract_workspace(chunks: Iterable[bytes], dest: Path, *, max_file_bytes: int = MAX_FILE_BYTES) -> Path:
    """Unpack ``get_archive(WORKSPACE)`` into ``dest``, dropping the top folder, streaming; entries that
    would land outside ``dest`` (absolute or escaping links, device files) are skipped, never followed; a
    regular file above ``max_file_bytes`` becomes a sparse file of its size (its bytes are never kept)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BufferedReader(_ChunkStream(chunks), 1 << 20), mode="r|") as tar:
        for member in tar:
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            member.name = parts[1]
            if member.islnk():
                member.linkname = member.linkname.split("/", 1)[-1]
            try:
                safe = tarfile.data_filter(member, str(dest))
            except tarfile.FilterError:
                continue
            if safe.isreg() and safe.size > max_file_bytes:
                target = dest / safe.name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as handle:
                    handle.truncate(safe.size)
                continue
            tar.extract(safe, dest, filter="fully_trusted", set_attrs=False)
    return dest


class DockerSandbox:
    """One container; made by ``DockerBackend.create``."""

    def __init__(
        self,
        container: ContainerAPI,
        limits: SandboxLimits,
        forwards: tuple[Forward, ...] = (),
        *,
        workdir: str = WORKSPACE,
        mounts: PlacedMounts | None = None,
        host_folder: Path | None = None,
    ) -> None:
        self.container, self.limits, self.forwards = container, limits, forwards
        self.workdir, self.mounts, self.host_folder = workdir, mounts, host_folder
        self.name = container.name
        self._destroyed = False

    def run(self, command: str, *, timeout_s: float, env: Mapping[str, str] | None = None) -> RunResult:
        if self._destroyed:
            raise SandboxError(f"sandbox {self.name} was destroyed; create a new one")
        seconds = max(1, math.ceil(timeout_s))
        argv = ["timeout", "-k", "1", str(seconds), *command_argv(command, self.forwards, "python3")]
        environment = {"HOME": WORKSPACE, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "NO_COLOR": "1", **(env or {})}
        start = time.monotonic()
        exit_code, output = self.container.exec_run(
            argv, workdir=self.workdir, environment=environment, user=f"{SANDBOX_UID}:{SANDBOX_UID}"
        )
        wall = time.monotonic() - start
        self.container.exec_run(
            ["bash", "-c", _SWEEP], workdir="/", environment={}, user=f"{SANDBOX_UID}:{SANDBOX_UID}"
        )
        timed_out = exit_code in _TIMEOUT_EXIT_CODES and wall >= seconds * 0.95
        return RunResult(
            exit_code=None if timed_out else exit_code,
            timed_out=timed_out,
            wall_s=wall,
            peak_rss_mb=self._peak_mb(),
            output_tail=(output or b"")[-_TAIL_BYTES:].decode("utf-8", "replace"),
        )

    def _peak_mb(self) -> float:
        """The container's peak memory so far (cgroup v1 ``max_usage``; the current usage on v2), which
        is the run's own peak for a one-run sandbox such as ``SandboxRunner`` makes."""
        memory = self.container.stats(stream=False, one_shot=True).get("memory_stats", {})
        return float(memory.get("max_usage", memory.get("usage", 0))) / (1024 * 1024)

    def collect(self, dest: Path) -> Path:
        chunks, _ = self.container.get_archive(WORKSPACE)
        extract_workspace(chunks, Path(dest))
        if self.mounts:
            self.mounts.restore(Path(dest))
        return Path(dest)

    def destroy(self) -> None:
        if self._destroyed:
            return
        try:
            self.container.remove(force=True)
        except Exception as exc:  # already gone is fine; anything else must be seen
            if "No such container" not in str(exc) and "404" not in str(exc):
                raise SandboxError(f"could not remove container {self.name}: {exc}") from exc
        if self.host_folder is not None:
            shutil.rmtree(self.host_folder, ignore_errors=True)
        self._destroyed = True


def _link_workdir(container: ContainerAPI, workdir: str) -> None:
    """Make ``workdir`` a link to ``/workspace`` in a container of the shared image. Root owns ``/``, so
    root creates the link without any capability (the container has none)."""
    script = f'[ -e "$1" ] || {{ mkdir -p "$(dirname "$1")" && ln -s {WORKSPACE} "$1"; }}'
    code, output = container.exec_run(
        ["sh", "-c", script, "link", workdir], workdir="/", environment={}, user="0:0"
    )
    if code != 0:
        raise SandboxError(f"could not link {workdir} to {WORKSPACE} in {container.name}: {output!r}")


def _open_to_sandbox_user(folder: Path, *, writable: bool) -> None:
    """Let the container's uid 1000 read (and, if ``writable``, write) a bound host folder."""
    for base, _dirs, files in os.walk(folder):
        os.chmod(base, 0o777 if writable else 0o755)
        for name in files:
            path = os.path.join(base, name)
            if not os.path.islink(path):
                os.chmod(path, (os.stat(path).st_mode & 0o777) | (0o666 if writable else 0o644))


def check_ro_binds(paths: Iterable[Path]) -> tuple[Path, ...]:
    """``paths`` as given (not resolved: a bound symlink shows its target's content at the link's path),
    each absolute and existing; none may cover a folder the sandbox owns (``/``, ``/run``) or lie in the
    workspace or the forward folder (under the private ``/tmp`` is fine: it is mounted first)."""
    checked = []
    for path in (Path(p) for p in paths):
        if not path.is_absolute() or not path.exists():
            raise ValueError(f"extra_ro_binds: {str(path)!r} must be an absolute path that exists")
        covers = any(Path(own).is_relative_to(path) for own in _OWN_PATHS)
        if covers or path.is_relative_to(WORKSPACE) or path.is_relative_to("/run/forward"):
            raise ValueError(f"extra_ro_binds: {str(path)!r} would hide {', '.join(_OWN_PATHS)}; bind less")
        checked.append(path)
    return tuple(dict.fromkeys(checked))


class DockerBackend:
    """Creates ``DockerSandbox``es from ``image``; sweeps a crashed launcher's containers on construction.

    ``extra_ro_binds`` are host files or folders every sandbox sees read-only at the same path (e.g. the
    harness installs and the node they run on), as ``LocalBackend``'s; the engine must run on this host.
    """

    def __init__(
        self,
        api: DockerAPI | None = None,
        *,
        image: str = IMAGE_TAG,
        prefix: str = DEFAULT_PREFIX,
        extra_ro_binds: Iterable[Path] = (),
        build_network: str = "host",
        mounts_root: Path | None = None,
    ) -> None:
        if "-" in prefix or not prefix.isalnum():
            raise ValueError(f"prefix={prefix!r}: use letters and digits only (names are split on '-')")
        self.extra_ro_binds = check_ro_binds(extra_ro_binds)
        self.api = api if api is not None else connect()
        self.image, self.prefix = image, prefix
        self.task_images = TaskImages(self.api, network=build_network)
        self._ensure_image()
        self.mounts_root = Path(mounts_root) if mounts_root else Path(tempfile.gettempdir()) / "hsbx-mounts"
        self.host = socket.gethostname()
        self.swept = self.sweep()

    def _ensure_image(self) -> None:
        """The shared sandbox image, built here (offline, once per engine) when the engine lacks it."""
        if self.task_images.exists(self.image):
            return
        if self.image != IMAGE_TAG:
            raise SandboxError(f"image {self.image} is not in the Docker engine: build or load it first")
        if not self.task_images.exists(DEBIAN_BASE):
            raise SandboxError(
                f"the sandbox image's base {DEBIAN_BASE} is not in the Docker engine: "
                "source scripts/sandbox-deps.sh (as root) builds it with debootstrap"
            )
        build_image(self.api)

    def create(
        self,
        workspace: Path,
        limits: SandboxLimits,
        *,
        forwards: tuple[Forward, ...] = (),
        read_only: tuple[str, ...] = (),
        placement: Placement | None = None,
    ) -> DockerSandbox:
        """``read_only`` is accepted for the Protocol but not enforced here (the workspace is a copy in the
        container owned by the sandbox user); the effect audit judges changes to those paths.

        ``placement``: a task image is built (once per digest, ``TaskImages``) and run instead of the
        shared image; its work directory is a link to ``/workspace`` (made in the image's sandbox layer, or
        here for the shared image); each mount's folder is a private host copy bound at its target."""
        placement = placement or Placement()
        image = self.image
        if placement.image is not None:
            image = self.task_images.ensure(placement.image, placement.workdir)
        name = new_name(self.prefix)
        host_folder, placed = None, None
        staged = Path(workspace)
        if placement.mounts:
            host_folder = self.mounts_root / name
            host_folder.mkdir(parents=True, mode=0o700)
            staged = copy_tree(workspace, host_folder / "workspace", max_file_bytes=None)
            placed = PlacedMounts(staged, placement.mounts, host_folder / "mounts")
            for mount, folder in placed.folders:
                _open_to_sandbox_user(folder, writable=mount.writable)
        try:
            return self._start(name, image, staged, limits, forwards, placement, placed, host_folder)
        except BaseException:
            if host_folder is not None:
                shutil.rmtree(host_folder, ignore_errors=True)
            raise

    def _start(
        self,
        name: str,
        image: str,
        workspace: Path,
        limits: SandboxLimits,
        forwards: tuple[Forward, ...],
        placement: Placement,
        placed: PlacedMounts | None,
        host_folder: Path | None,
    ) -> DockerSandbox:
        memory = f"{limits.memory_mb}m"
        mounts = {str(p): {"bind": str(p), "mode": "ro"} for p in self.extra_ro_binds}
        mounts |= {str(f.host_socket): {"bind": f.inside_socket, "mode": "rw"} for f in forwards}
        for mount, folder in placed.folders if placed else ():
            mounts[str(folder)] = {"bind": mount.target, "mode": "rw" if mount.writable else "ro"}
        container = self.api.containers.run(
            image,
            ["sleep", "infinity"],
            name=name,
            detach=True,
            init=True,
            network_mode="none",
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=limits.max_processes + _HELPERS,
            nano_cpus=int(limits.cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            working_dir=WORKSPACE,
            tmpfs={"/tmp": f"size={limits.memory_mb}m"},
            volumes=mounts,
            labels={PREFIX_LABEL: self.prefix, HOST_LABEL: self.host},
        )
        sandbox = DockerSandbox(
            container, limits, forwards, workdir=placement.workdir, mounts=placed, host_folder=host_folder
        )
        try:
            if not container.put_archive(WORKSPACE, workspace_tar(workspace)):
                raise SandboxError(f"could not copy the workspace into {name}; is {WORKSPACE} in the image?")
            if forwards and not container.put_archive("/run/forward", relay_tar()):
                raise SandboxError(f"could not copy the relay into {name}; is /run/forward in the image?")
            if placement.workdir != WORKSPACE and placement.image is None:
                _link_workdir(container, placement.workdir)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _ours(self) -> Iterator[ContainerAPI]:
        found = self.api.containers.list(all=True, filters={"label": f"{PREFIX_LABEL}={self.prefix}"})
        for container in found:
            if container.labels.get(HOST_LABEL) == self.host:  # owners elsewhere cannot be checked
                yield container

    def sweep(self) -> int:
        """Remove this host's containers with this prefix whose owner process is dead; return how many."""
        removed = 0
        for container in self._ours():
            if not owner_alive(container.name, self.prefix):
                container.remove(force=True)
                removed += 1
        return removed
