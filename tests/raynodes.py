"""Ray nodes started the way a cluster starts them (``ray start``), for the tests that submit jobs.

A node runs in its own process group on its own ports (free ones, so it never meets the test session's
cluster) and is stopped alone: ``ray stop`` would stop every Ray cluster on the machine. A node can be given
an address of its own (``127.0.0.2``, ``127.0.0.3``, …: several nodes on one machine) and a disk of its own
(``NodeDisk``): the node runs in a mount namespace of its own with a fresh tmpfs over each private folder
(``/tmp``, its home, its caches), so a file one node writes there is absent on every other node, as on
machines with no disk in common; it may start with files already there (a provisioned disk) and run as a
non-root user, as Ray's container runs its nodes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
HEAD_PORT_FLAGS = (
    "--port",
    "--dashboard-port",
    "--ray-client-server-port",
)
NODE_PORT_FLAGS = (
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--metrics-export-port",
    "--node-manager-port",
    "--object-manager-port",
    "--runtime-env-agent-port",
)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def processes_naming(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (a node's temp dir names all of its processes)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@dataclass(frozen=True, slots=True)
class NodeDisk:
    """What one node sees of this machine's disk, and as whom it runs."""

    private: tuple[Path, ...] = ()
    """Folders the node sees empty at its start (a tmpfs each, writable by every user): none is shared."""
    seeds: tuple[tuple[Path, Path], ...] = ()
    """``(source, folder)``: ``source``'s files copied into ``folder`` (a private one) before the node starts,
    the node's disk as provisioned. A source must lie outside every private folder (hidden once mounted)."""
    uid: int | None = None
    """Run the node as this user and group after the mounts (which need root); None: as the caller."""
    installs: tuple[Path, ...] = ()
    """Installed folders the node's user must reach (an interpreter under root's home, here): a node image
    installs them readable by all. Each one's closed ancestor becomes private and the folder is bound back."""

    def __post_init__(self) -> None:
        for source, _ in self.seeds:
            hidden = [folder for folder in self.private if source.is_relative_to(folder)]
            if hidden:
                raise ValueError(f"seed {source} lies in the private folder {hidden[0]}: stage it elsewhere")


def stage_parent(*disks: NodeDisk | None) -> Path:
    """A folder outside every private one of ``disks``, for the installs held while a node starts."""
    private = [folder for disk in disks if disk is not None for folder in disk.private]
    for candidate in (Path("/dev/shm"), Path("/var/tmp"), Path("/srv")):
        if candidate.is_dir() and not any(candidate.is_relative_to(folder) for folder in private):
            return candidate
    raise ValueError(f"no folder to stage installs in outside the private {private}")


def closed_ancestor(folder: Path) -> Path | None:
    """The outermost folder above ``folder`` that other users cannot pass through, or None."""
    for ancestor in reversed(folder.resolve().parents):
        if not ancestor.stat().st_mode & stat.S_IXOTH:
            return ancestor
    return None


def on_own_disk(disk: NodeDisk, argv: list[str], stage: Path) -> list[str]:
    """``argv`` run in a new mount namespace with ``disk``'s private folders (created if missing), its
    installs reachable, its seeds copied in, as its user. ``stage``: an empty folder outside every private
    one, where the installs are held while their ancestors are covered. The umask lets a root node and a
    non-root one share files in the storage folder, as a bucket does."""
    lines = ["set -e", "umask 000"]
    hidden = [] if disk.uid is None else [f for f in disk.installs if closed_ancestor(f) is not None]
    closed = {closed_ancestor(folder) for folder in hidden}
    staged = [(stage / str(n), folder) for n, folder in enumerate(hidden)]
    for held, folder in staged:
        lines += [f"mkdir -p '{held}'", f"mount --bind '{folder}' '{held}'"]
    for folder in sorted({*disk.private, *closed}, key=lambda p: len(p.parts)):  # /tmp before its insides
        mode = 1777 if folder in disk.private else 755
        lines += [f"mkdir -p '{folder}'", f"mount -t tmpfs -o size=8g,mode={mode} ray-node '{folder}'"]
    for held, folder in staged:
        lines += [f"mkdir -p '{folder}'", f"mount --bind '{held}' '{folder}'"]
    for source, folder in disk.seeds:
        lines.append(f"cp -a '{source}/.' '{folder}/'")
        if disk.uid is not None:
            lines.append(f"chown -R {disk.uid}:{disk.uid} '{folder}'")
    user = f"setpriv --reuid={disk.uid} --regid={disk.uid} --clear-groups " if disk.uid is not None else ""
    lines.append(f'exec {user}"$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *argv]


def stop_group(process: subprocess.Popen, timeout_s: float = 30) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=timeout_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def wait_for_job_api(address: str, token: str, process: subprocess.Popen, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, "ray start --head exited:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the Ray head's job API did not come up:\n" + log.read_text()
        try:
            headers = {"authorization": f"Bearer {token}"}
            if httpx.get(f"{address}/api/version", headers=headers, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)


def wait_for_line(log: Path, text: str, process: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in (log.read_text() if log.exists() else ""):
        assert process.poll() is None, "ray start exited:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} from ray start:\n" + log.read_text()[-3000:]
        time.sleep(0.5)


@dataclass(frozen=True, slots=True)
class RayCluster:
    jobs: str
    """The job API (``ray job submit --address``); empty without a dashboard."""
    gcs: str
    """``ip:port`` of the head's GCS (``ray.init(address=...)``)."""


@contextmanager
def ray_cluster(
    env: dict[str, str],
    logs: Path,
    worker_ips: tuple[str, ...] = (),
    head_ip: str = "127.0.0.1",
    cpus: int = 8,
    head_cpus: int | None = None,
    head_disk: NodeDisk | None = None,
    worker_disk: NodeDisk | None = None,
    head_extra: Callable[[str], list[str]] | None = None,
    dashboard: bool = True,
) -> Iterator[RayCluster]:
    """A Ray head (and workers at ``worker_ips``), each node a process group of its own, with ``cpus``
    (the head ``head_cpus`` when given). ``head_disk`` / ``worker_disk``: each node's own disk (see the
    module docstring; None: this machine's); ``head_extra(gcs)``: more ``ray start`` arguments for the
    head, given its GCS address (an autoscaling config names it)."""
    logs.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix="rayh", dir="/tmp"))  # socket paths must stay short
    stage_root = Path(tempfile.mkdtemp(prefix="raynodes", dir=stage_parent(head_disk, worker_disk)))
    head_ports = dict(zip(HEAD_PORT_FLAGS, free_ports(len(HEAD_PORT_FLAGS), head_ip), strict=True))
    nodes: list[subprocess.Popen] = []

    def start(ip: str, role: list[str], log: Path, node_cpus: int, disk: NodeDisk | None) -> subprocess.Popen:
        ports = dict(zip(NODE_PORT_FLAGS, free_ports(len(NODE_PORT_FLAGS), ip), strict=True))
        argv = [str(BIN / "ray"), "start", "--block", f"--num-cpus={node_cpus}", f"--node-ip-address={ip}"]
        argv += [*role, *(f"{flag}={port}" for flag, port in ports.items())]
        if disk is not None:
            argv = on_own_disk(disk, argv, Path(tempfile.mkdtemp(prefix="rayn", dir=stage_root)))
        with log.open("w") as out:
            node = subprocess.Popen(
                argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        nodes.append(node)
        return node

    gcs = f"{head_ip}:{head_ports['--port']}"
    head_role = ["--head", f"--temp-dir={temp}", f"--dashboard-host={head_ip}"]
    head_role += [f"{flag}={port}" for flag, port in head_ports.items()]
    head_role += [] if dashboard else ["--include-dashboard=false"]
    head_role += head_extra(gcs) if head_extra else []
    address = f"http://{head_ip}:{head_ports['--dashboard-port']}" if dashboard else ""
    try:
        head_node_cpus = cpus if head_cpus is None else head_cpus
        head = start(head_ip, head_role, logs / "head.log", head_node_cpus, head_disk)
        if dashboard:
            wait_for_job_api(address, env.get("RAY_AUTH_TOKEN", ""), head, logs / "head.log")
        else:
            wait_for_line(logs / "head.log", "Ray runtime started", head)
        for n, ip in enumerate(worker_ips, start=1):
            log = logs / f"worker{n}.log"
            worker = start(ip, [f"--address={gcs}"], log, cpus, worker_disk)
            wait_for_line(log, "Ray runtime started", worker)
        yield RayCluster(address, gcs)
    finally:
        for node in reversed(nodes):
            stop_group(node)
        for pid in processes_naming(str(temp)):  # anything that left its group but names this cluster
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(stage_root, ignore_errors=True)
