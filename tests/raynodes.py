"""Ray nodes started the way a cluster starts them (``ray start``), for the tests that submit jobs.

A node runs in its own process group on its own ports (free ones, so it never meets the test session's
cluster) and is stopped alone: ``ray stop`` would stop every Ray cluster on the machine. A node can be given
an address of its own (``127.0.0.2``, ``127.0.0.3``, …: several nodes on one machine) and a private folder:
the node runs in a mount namespace of its own with a fresh tmpfs over that path, so a file one node writes
there is absent on every other node, as on machines with no disk in common.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
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


def in_private_folder(folder: Path, argv: list[str]) -> list[str]:
    """``argv`` run in a new mount namespace with an empty tmpfs over ``folder`` (which must exist)."""
    mount = f'mount -t tmpfs -o size=8g,mode=0777 ray-node {folder} && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh", *argv]


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
    private: Path | None = None,
    head_extra: Callable[[str], list[str]] | None = None,
    dashboard: bool = True,
) -> Iterator[RayCluster]:
    """A Ray head (and workers at ``worker_ips``), each node a process group of its own. ``private``: a
    folder made private per node (see the module docstring); ``head_extra(gcs)``: more ``ray start``
    arguments for the head, given its GCS address (an autoscaling config names it)."""
    logs.mkdir(parents=True, exist_ok=True)
    temp = Path(__import__("tempfile").mkdtemp(prefix="rayh", dir="/tmp"))  # socket paths must stay short
    head_ports = dict(zip(HEAD_PORT_FLAGS, free_ports(len(HEAD_PORT_FLAGS), head_ip), strict=True))
    nodes: list[subprocess.Popen] = []

    def start(ip: str, role: list[str], log: Path) -> subprocess.Popen:
        ports = dict(zip(NODE_PORT_FLAGS, free_ports(len(NODE_PORT_FLAGS), ip), strict=True))
        argv = [str(BIN / "ray"), "start", "--block", f"--num-cpus={cpus}", f"--node-ip-address={ip}"]
        argv += [*role, *(f"{flag}={port}" for flag, port in ports.items())]
        if private is not None:
            argv = in_private_folder(private, argv)
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
        head = start(head_ip, head_role, logs / "head.log")
        if dashboard:
            wait_for_job_api(address, env.get("RAY_AUTH_TOKEN", ""), head, logs / "head.log")
        else:
            wait_for_line(logs / "head.log", "Ray runtime started", head)
        for n, ip in enumerate(worker_ips, start=1):
            log = logs / f"worker{n}.log"
            worker = start(ip, [f"--address={gcs}"], log)
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
