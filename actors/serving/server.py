"""VLLMServer: owns one vLLM OpenAI server process for one base model and its named LoRA adapters.

A plain class (the Ray actor is made from it in ``actors/placement.py``), thread-safe so that publishes,
retires, leases and health probes can run side by side in a threaded actor.

Contract (what trainers, rollouts and the evaluation rely on; ``actors.trainer.AdapterServer`` is the
trainer's side of it):
- ``publish(name, path)`` copies the adapter into the server's own store through a staging folder and an
  atomic rename, validates the copy (a half-written adapter is rejected, never served), then asks vLLM
  to load it. An existing name is an error, never an overwrite. vLLM loads adapters between engine steps,
  so requests for other adapters keep flowing.
- ``retire(name)`` stops listing the name at once, then unloads it and deletes its files once no lease
  holds it and vLLM reports no running or waiting request naming it (or after ``retire_grace_s``).
- A watchdog thread probes the process; if it died it is restarted on the same port and every live
  adapter is re-published from the store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from actors.errors import (
    AdapterError,
    AdapterInvalidError,
    ServerStartError,
    ServerUnavailableError,
)
from actors.serving.adapters import (
    AdapterEntry,
    AdapterRegistry,
    AdapterState,
    busy_adapters_from_metrics,
    check_adapter_name,
    inspect_adapter,
    ready_to_unload,
)
from actors.serving.address import advertised, bind_address, node_address
from actors.serving.config import ServingConfig, resolve_device, server_command, server_env
from actors.serving.transfer import PackedAdapter, unpack_adapter
from actors.serving.weights import local_weights

log = logging.getLogger(__name__)
_HTTP_TIMEOUT = httpx.Timeout(connect=5.0, read=120.0, write=30.0, pool=30.0)


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the actor that started it dies, even by SIGKILL
    (Ray kills actors that way), so no orphaned vLLM keeps the port and gigabytes of memory."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


_REAPER = """
import os, select, signal, sys, time
holder, group = int(sys.argv[1]), int(sys.argv[2])
child = os.fork()
if child:  # the reaper is a grandchild: killing the holder's children does not reach it
    print(child, flush=True)
    os._exit(0)
devnull = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(devnull, fd)  # let go of the caller's pipes
try:
    select.select([os.pidfd_open(holder)], [], [])  # readable once the holder has exited
except ProcessLookupError:
    pass
for sig in (signal.SIGTERM, signal.SIGKILL):
    if sig == signal.SIGKILL:
        time.sleep(5)  # the SIGTERM's grace
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        break
"""
"""Watches the process that started vLLM from outside and kills vLLM's whole process group once that
process is gone. Ray kills a dead actor's child processes with SIGKILL, so the API server cannot stop its
engine core, which then lived on with its memory and CPU; this reaper is not a child, so it survives."""


def _group_gone(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    """Wait up to ``wait_s`` for every process of ``proc``'s group to exit (reaping ``proc`` itself)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        proc.poll()
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


class VLLMServer:
    """One vLLM process, its adapter store and registry, and a watchdog that keeps it alive."""

    def __init__(self, cfg: ServingConfig, work_dir: str | None = None, port: int = 0) -> None:
        self.cfg = cfg
        self.device = resolve_device(cfg.device, _cuda_available())
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="ha-serving-"))
        self.store = self.work_dir / "adapters"
        shutil.rmtree(self.store, ignore_errors=True)  # an earlier server's versions: no vLLM serves them,
        self.store.mkdir(parents=True)  # and a rerun in the same folder must publish the same names again
        self.host = bind_address(cfg.host)
        """The address vLLM binds; ``url()`` advertises it (the node's IP on a cluster)."""
        self.port = port or _free_port(self.host)
        self.registry = AdapterRegistry(capacity=cfg.max_loras)
        self.restarts = 0
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._reapers: list[int] = []
        self._http = httpx.Client(base_url=f"http://{self._reach()}:{self.port}", timeout=_HTTP_TIMEOUT)
        self.model_path: str | None = None
        """The weights' folder on this node (a Hub id is fetched into this node's cache at start)."""
        self._stopping = threading.Event()
        self._watchdog: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> str:
        """Start the process, wait until it answers and has served one warm-up token; return ``url()``."""
        with self._lock:
            if self.model_path is None:
                self.model_path = str(local_weights(self.cfg))
            self._spawn()
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="vllm-watchdog", daemon=True)
            self._watchdog.start()
        return self.url()

    def _spawn(self) -> None:
        log_path = self.work_dir / f"vllm-{self.restarts}.log"
        env = {**os.environ, **server_env(self.cfg, device=self.device)}
        cmd = server_command(self.cfg, self.port, device=self.device, host=self.host, model=self.model_path)
        log.info("starting vLLM: %s", " ".join(cmd))
        with open(log_path, "ab") as log_file:
            self._proc = subprocess.Popen(
                cmd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        launched = subprocess.run(  # returns at once: the reaper forks away
            [sys.executable, "-c", _REAPER, str(os.getpid()), str(self._proc.pid)],
            start_new_session=True,
            check=True,
            capture_output=True,
            text=True,
        )
        self._reapers.append(int(launched.stdout))
        deadline = time.monotonic() + self.cfg.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerStartError(
                    f"vLLM exited with code {self._proc.returncode} while starting; "
                    f"log {log_path}:\n{self._log_tail(log_path)}"
                )
            if self._healthy():
                self._warm_up()
                return
            time.sleep(0.5)
        self._kill()
        raise ServerStartError(
            f"vLLM was not healthy after {self.cfg.startup_timeout_s:.0f} s "
            f"(raise serving.startup_timeout_s?); log {log_path}:\n{self._log_tail(log_path)}"
        )

    def _warm_up(self) -> None:
        # The first completion on a fresh vLLM pays one-off costs (~20 s on CPU): pay them before callers.
        self._http.post(
            "/v1/chat/completions",
            json={
                "model": self.cfg.served_model_name,
                "max_tokens": 1,
                "messages": [{"role": "user", "content": "hi"}],
            },
        ).raise_for_status()

    @staticmethod
    def _log_tail(path: Path, lines: int = 40) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _healthy(self, timeout_s: float = 2.0) -> bool:
        try:
            return self._http.get("/health", timeout=timeout_s).status_code == 200
        except httpx.HTTPError:
            return False

    def _answering(self, timeout_s: float = 2.0) -> bool:
        """The process runs and answers ``/health`` within ``timeout_s``."""
        return self._proc is not None and self._proc.poll() is None and self._healthy(timeout_s)

    def _kill(self) -> None:
        """Stop the whole process group, even when the API server itself is already gone (its engine core
        may not be), then its reaper, whose group id could otherwise be reused by the time it fires."""
        proc, self._proc = self._proc, None
        reapers, self._reapers = self._reapers, []
        if proc is not None:
            for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                if _group_gone(proc, wait_s):
                    break
        for pid in reapers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop the watchdog and the process; the adapter store is removed with the work dir."""
        self._stopping.set()
        with self._lock:
            self._kill()
        self._http.close()

    def _watch(self) -> None:
        failures = 0
        while not self._stopping.wait(self.cfg.health_interval_s):
            proc = self._proc
            dead = proc is None or proc.poll() is not None
            failures = 0 if (not dead and self._healthy(self.cfg.health_timeout_s)) else failures + 1
            if dead or failures >= 3:
                with self._lock:
                    if not self._stopping.is_set() and self._proc is proc:  # else a publish recovered it
                        try:
                            self._recover()
                        except Exception:  # the watchdog must outlive any one failed recovery
                            log.exception("recovery failed; the watchdog will try again")
                failures = 0

    def _recover(self) -> None:
        log.warning(
            "vLLM process is down; restarting and re-publishing %d adapters", len(self.registry.entries)
        )
        self._kill()
        self.restarts += 1
        try:
            self._spawn()
        except ServerStartError:
            log.exception("restart failed; the watchdog will try again")
            return
        for entry in list(self.registry.entries.values()):
            if entry.state is not AdapterState.LIVE:
                self._drop_files(self.registry.drop(entry.name))
                continue
            try:
                self._load(entry.name, entry.path)
            except AdapterInvalidError:
                # Its files were validated at publish; if the server now refuses them, drop it rather than
                # leave a name listed that every request would fail on.
                log.exception("could not re-publish %s after a restart; dropping it", entry.name)
                self._drop_files(self.registry.drop(entry.name))

    # --- queries ---------------------------------------------------------------------------------------
    def _reach(self) -> str:
        host = advertised(self.host)
        return f"[{host}]" if ":" in host else host

    def url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``), at the address other nodes reach."""
        return f"http://{self._reach()}:{self.port}/v1"

    def node(self) -> str:
        """The Ray node this server runs on (its IP), for placement reports."""
        return node_address("node")

    def base_model_name(self) -> str:
        return self.cfg.served_model_name

    def adapters(self) -> list[str]:
        """Live adapter names, sorted; retiring ones are no longer listed."""
        with self._lock:
            return self.registry.live()

    def server_pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def check_health(self) -> dict[str, Any]:
        """Called by the train loop each step: raises if the server is down and not coming back."""
        alive = self._answering()
        status = {
            "healthy": alive,
            "pid": self.server_pid(),
            "restarts": self.restarts,
            "adapters": self.adapters(),
            "url": self.url(),
            "device": self.device,
            "store": str(self.store),
            "log": str(self.work_dir / f"vllm-{self.restarts}.log"),
        }
        if not alive and self._stopping.is_set():
            raise ServerUnavailableError("serving was stopped")
        return status

    # --- adapters --------------------------------------------------------------------------------------
    def publish(self, name: str, path: str) -> float:
        """Load the adapter folder at ``path`` (on this node) under ``name``; return the publish time in
        milliseconds."""

        def fill(staging: Path) -> None:
            if not Path(path).is_dir():
                raise AdapterInvalidError(
                    f"adapter path {path} is not a folder: pass the folder save_pretrained wrote"
                )
            shutil.copytree(path, staging)

        return self._publish(name, fill)

    def publish_packed(self, name: str, packed: PackedAdapter) -> float:
        """Load an adapter sent as bytes (``transfer.pack_adapter``) under ``name``: a trainer on another
        node publishes without a shared disk. Returns the publish time in milliseconds (unpack and load;
        the transfer itself is the caller's to time)."""
        return self._publish(name, lambda staging: unpack_adapter(packed, staging))

    def _publish(self, name: str, fill: Any) -> float:
        """Fill a staging folder, validate it, rename it into the store atomically, then ask vLLM to load
        it: a half-written or invalid adapter is never served, and an existing name is never replaced."""
        started = time.perf_counter()
        check_adapter_name(name, self.cfg.served_model_name)
        with self._lock:
            self.registry.reserve(name)
            final = self.store / name
            staging = self.store / f".staging-{name}-{uuid.uuid4().hex[:8]}"
            try:
                fill(staging)
                info = inspect_adapter(staging, self.cfg.max_lora_rank)
                staging.rename(final)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            try:
                self._load_through_a_restart(name, final)
            except BaseException:
                shutil.rmtree(final, ignore_errors=True)
                raise
            self.registry.add(AdapterEntry(name=name, path=final, info=info))
        return (time.perf_counter() - started) * 1000.0

    def _load_through_a_restart(self, name: str, path: Path) -> None:
        """``_load``, and when the server does not answer (it died, or is dying, under this publish), the
        watchdog's recovery now, under the lock this publish holds: restart, re-publish the live adapters,
        then load this one again. Without it a trainer's publish that met a restart failed its run."""
        try:
            self._load(name, path)
        except ServerUnavailableError as exc:
            if self._stopping.is_set():
                raise
            if not self._answering(self.cfg.health_timeout_s):
                log.warning("vLLM did not answer the publish of %s (%s); restarting it first", name, exc)
                self._recover()
            self._load(name, path)

    def _load(self, name: str, path: Path) -> None:
        try:
            response = self._http.post(
                "/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path)}
            )
        except httpx.HTTPError as exc:
            raise ServerUnavailableError(f"vLLM did not answer the adapter load of {name!r}: {exc}") from exc
        if response.status_code != 200:
            raise AdapterInvalidError(
                f"vLLM refused adapter {name!r} ({response.status_code}): {_error_message(response)}"
            )

    def lease(self, name: str) -> None:
        """Called when a session starts on ``name``: retire will wait for the matching ``release``."""
        with self._lock:
            self.registry.lease(name)

    def release(self, name: str) -> None:
        with self._lock:
            self.registry.release(name)

    def retire(self, name: str, wait: bool = True) -> None:
        """Stop listing ``name``; unload it and delete its files after the last request naming it."""
        with self._lock:
            entry = self.registry.mark_retiring(name)
        if wait:
            self._reap(entry)
        else:
            threading.Thread(target=self._reap, args=(entry,), name=f"retire-{name}", daemon=True).start()

    def _reap(self, entry: AdapterEntry) -> None:
        deadline = time.monotonic() + self.cfg.retire_grace_s
        while time.monotonic() < deadline and not ready_to_unload(entry, self._busy_adapters()):
            time.sleep(0.2)
        with self._lock:
            if self.registry.entries.get(entry.name) is not entry:
                return  # a restart already dropped it
            response = self._http.post("/v1/unload_lora_adapter", json={"lora_name": entry.name})
            if response.status_code not in (200, 404):
                raise AdapterError(f"vLLM refused to unload {entry.name!r}: {_error_message(response)}")
            self._drop_files(self.registry.drop(entry.name))

    def _busy_adapters(self) -> frozenset[str]:
        try:
            return busy_adapters_from_metrics(self._http.get("/metrics", timeout=5.0).text)
        except httpx.HTTPError:
            return frozenset()

    @staticmethod
    def _drop_files(entry: AdapterEntry | None) -> None:
        if entry is not None:
            shutil.rmtree(entry.path, ignore_errors=True)


def _error_message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500]
