"""One rollout, end to end: sandbox, harness, guard record, fresh-sandbox verifier, reward, training rows.

``RolloutSession.run`` is a plain method (the rollout actor is a thin Ray shell around it, made by
``actors.placement.make_actor``). It never raises for what a session can do wrong: a model that fails the
task scores by the verifier; a blocked call scores 0. A retry is a fresh sample, so one the agent could
cause would let a policy drop its bad rollouts from a group: only failures the host can prove are its own
come back as ``RolloutOutcome.failure`` (retried a bounded number of times by
``actors.grpo.GroupCollector``): anything before the harness starts (the sandbox could not be created, the
guard refused the rollout), a model-server failure the guard recorded, the relay failing to reach the
guard, and any failure before the model produced any output. Everything else the agent's tool calls could
have caused (its harness killed by a signal the host did not send, its usage file or session log deleted
or replaced, the sandbox ending early, the harness reporting a failed run the guard did not see) is scored
0 with ``RolloutOutcome.session_error`` saying why (``judge_session``); an audit or verifier exception is a
flag or verdict ``error``, also 0. The harness reaches the guard only
through a ``Forward``: inside the sandbox ``http://127.0.0.1:<forward_port>/s/<rollout>/v1``, on the host
a unix socket relayed to the guard's TCP port.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from actors.grpo.samples import TrainingRow, rollout_rows, turns_from_record
from actors.rollout_settings import RolloutSettings
from actors.trajectories import save_rollout_trajectory
from environments.harnesses import LaunchResult, LaunchSpec, UnixToTcp, launch_in_sandbox
from environments.harnesses.registry import harness_spec
from environments.harnesses.route import rollout_path
from environments.integrity import AuditResult, Flag, audit_effects, protected_paths, take_snapshot
from environments.reward import RewardInputs, compute_reward
from environments.sandboxes import Forward, SandboxLimits
from environments.sandboxes.runner import SandboxRunner
from environments.tasks.oracle import OracleRun, Verdict, verify, write_start

if TYPE_CHECKING:
    from environments.core.types import Task
    from environments.sandboxes import SandboxBackend

FORWARD_PORT = 8000
"""The guard's port inside every sandbox."""


class GuardClient(Protocol):
    """The guard's rollout API, as the rollout needs it."""

    host: str
    """The guard's address as this node reaches it (127.0.0.1 for the Serve proxy on every node, or the
    one node that runs it); the sandbox's forward relays there."""
    port: int
    """The guard's TCP port."""

    def open(
        self,
        rollout_id: str,
        harness: str,
        adapter: str,
        allowlist: tuple[str, ...],
        protected: tuple[str, ...] = (),
    ) -> str:
        """Open a rollout; return its path prefix (``/s/<rollout_id>/v1``). ``protected``: the task's
        paths (relative to the workspace) the guard judges writes against."""
        ...

    def atif(self, rollout_id: str) -> dict:
        """The open rollout's ATIF trajectory (``RolloutRecord.to_atif()``), saved beside the run."""
        ...

    def close(self, rollout_id: str) -> dict:
        """Close the rollout and return its final record (``RolloutRecord.to_json()``); raise
        ``RecordMissing`` when the guard has no open record of it (closed early, or deleted)."""
        ...


class RecordMissing(LookupError):
    """The guard has no open record of the rollout: it was closed or deleted before the session ended.
    The rollout scores 0 (never a retry: a policy must not learn that deleting its record pays)."""


@dataclass(frozen=True, slots=True)
class RolloutRequest:
    rollout_id: str
    group_id: str
    task: Task
    harness: str
    adapter: str
    """The adapter version current when the rollout starts (``<harness>-v<N>``)."""
    start_version: int


@dataclass(frozen=True, slots=True)
class RolloutOutcome:
    rollout_id: str
    group_id: str
    reward: float = 0.0
    verdict: str = ""
    verifier_reason: str = ""
    judge: str = ""
    """How the verifier judged (``isolated``, ``output-only``, ``answer-file`` or ``in-process``)."""
    tool_calls: int = 0
    """The guard's count (the harness's own count, where it has one, is in ``harness_tool_calls``)."""
    harness_tool_calls: int | None = None
    blocked: bool = False
    block_reasons: tuple[str, ...] = ()
    would_block_reasons: tuple[str, ...] = ()
    """Guard in monitor mode: ``rule: reason`` of each call it would have blocked (none was; no reward
    effect)."""
    tampered: bool = False
    """The effect audit found a change to what decides the verdict (reward 0, whatever the guard said)."""
    tamper_flags: tuple[str, ...] = ()
    """The audit's ``rule: path (detail)`` for each finding."""
    rows: tuple[TrainingRow, ...] = ()
    duration_s: float = 0.0
    failure: str | None = None
    """Set when the session could not be scored for a reason the host proved is its own: retry it."""
    timings: dict[str, float] = field(default_factory=dict)
    session_error: str = ""
    """The session ended in a way the agent could have caused (``judge_session``): scored 0 with this
    reason, never retried."""


class GuardHTTP:
    """``GuardClient`` over the guard's HTTP API (standalone ``python -m serve`` or the Serve app)."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        import httpx

        self.url = url.rstrip("/")
        parsed = httpx.URL(self.url)
        self.host = parsed.host or "127.0.0.1"
        self.port = parsed.port or 80
        self.base_path = parsed.path.rstrip("/")
        """The shard's route (``/pi``), before each rollout's ``/s/<id>/v1``."""
        self._client = httpx.Client(base_url=self.url, timeout=timeout_s)

    def open(
        self,
        rollout_id: str,
        harness: str,
        adapter: str,
        allowlist: tuple[str, ...],
        protected: tuple[str, ...] = (),
    ) -> str:
        body = {
            "rollout_id": rollout_id,
            "harness": harness,
            "adapter": adapter,
            "allowlist": list(allowlist),
            "protected": list(protected),
        }
        response = self._client.post("/rollouts", json=body)
        if response.status_code != 201:
            raise RuntimeError(
                f"guard refused rollout {rollout_id}: HTTP {response.status_code} {response.text}"
            )
        return rollout_path(rollout_id, self.base_path)

    def atif(self, rollout_id: str) -> dict:
        response = self._client.get(f"/rollouts/{rollout_id}/atif")
        response.raise_for_status()
        return response.json()

    def close(self, rollout_id: str) -> dict:
        response = self._client.delete(f"/rollouts/{rollout_id}")
        if response.status_code == 404:
            raise RecordMissing(f"the guard has no open record of rollout {rollout_id}")
        if response.status_code != 200:
            raise RuntimeError(
                f"guard lost rollout {rollout_id}: HTTP {response.status_code} {response.text}"
            )
        return response.json()


SERVER_ERRORS = frozenset(
    {"upstream_unreachable", "upstream_timeout", "upstream_malformed_response", "upstream_stream_interrupted"}
)
"""Turn errors (``serve.record.UpstreamError``) that are the model server's: the guard saw them happen.
``upstream_error_status`` is the server's only for a 5xx; a 4xx answers the request (a context too long),
and ``client_closed_stream`` is the harness hanging up: both can be the agent's doing."""


def server_failure(record: Mapping) -> str | None:
    """The first model-server failure the guard recorded in ``record``'s turns, as ``error (status)``."""
    for turn in record.get("turns") or ():
        error, status = turn.get("error"), turn.get("upstream_status")
        server_status = error == "upstream_error_status" and (status is None or status >= 500)
        if error in SERVER_ERRORS or server_status:
            return f"{error} ({status})" if status else str(error)
    if record.get("failed") and "turns" not in record:  # a record without its turns: take the guard's word
        return "the guard recorded a failed turn"
    return None


def model_acted(record: Mapping) -> bool:
    """Whether any model output reached the harness (a completed turn, a streamed first token, or a tool
    call). Before that, nothing in the sandbox ran on the model's behalf, so no failure can be its doing."""
    if int(record.get("tool_calls") or 0) > 0:
        return True
    for turn in record.get("turns") or ():
        if turn.get("error") is None or turn.get("first_token_s") is not None or turn.get("tool_calls"):
            return True
    return False


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """How a session ended, as the host saw it: what ``judge_session`` decides from."""

    record: Mapping = field(default_factory=dict)
    """The guard's final record of the rollout (``{"missing": True}`` when it had none)."""
    launched: LaunchResult | None = None
    """The harness run; None when the sandbox failed after the harness started (``error`` says how)."""
    error: str = ""
    """An exception while the harness ran or its workspace was collected (the sandbox ended early)."""
    guard_unreachable: int = 0
    """Requests the host's relay could not deliver to the guard (``UnixToTcp.guard_unreachable``)."""


@dataclass(frozen=True, slots=True)
class SessionJudgement:
    retry: bool
    """True: a host failure (the pool retries); False: scored 0 with ``reason``."""
    reason: str


def judge_session(end: SessionEnd) -> SessionJudgement | None:
    """Whether a finished session is retried, scored 0, or (None) judged by the audit and verifier.

    Retried only for what the host proves is its own: a model-server failure in the guard's record, the
    relay failing to reach the guard, or any failure before the model's first output (nothing had acted
    for it). After that, a signal the host did not send (it sends one only on timeout, which is scored as
    it stands), a failed run the harness reports (hermes's usage file, which the agent can delete or
    rewrite), records that are missing without a timeout or unreadable, and a sandbox error are all things
    a tool call can cause: scored 0, never retried."""
    server = server_failure(end.record)
    if server:
        return SessionJudgement(True, f"model_server_failed: {server}")
    if end.guard_unreachable:
        return SessionJudgement(True, f"guard_unreachable: {end.guard_unreachable} requests got no guard")
    launched = end.launched
    if end.error:
        problem = f"sandbox_error: {end.error}"
    elif launched is None:
        return None
    elif launched.killed_by is not None:
        problem = f"harness_killed: signal {launched.killed_by}, not sent by the host"
    elif launched.failed:
        problem = f"harness_failed: the harness reported a failed run ({launched.stderr_tail[-160:].strip()})"
    elif launched.records_problem:
        problem = f"harness_records_unreadable: {launched.records_problem}"
    elif launched.session_log is None and not launched.timed_out:
        problem = "harness_records_missing: the harness's session log is gone"
    else:
        return None
    if not model_acted(end.record) and not end.record.get("missing"):
        return SessionJudgement(True, f"{problem} (before any model output)")
    return SessionJudgement(False, problem)


class RolloutSession:
    """Runs rollouts one at a time (an actor holds one; a pool holds many actors)."""

    def __init__(
        self,
        backend: SandboxBackend,
        guard: GuardClient,
        work_root: Path | None = None,
        *,
        max_tokens: int = 4096,
        trajectories: Path | str | None = None,
    ) -> None:
        self.backend = backend
        self.guard = guard
        self.work_root = Path(work_root or tempfile.gettempdir())
        self.max_tokens = max_tokens
        """Completion tokens per model call, passed to the harness."""
        self.trajectories = trajectories
        """Where each rollout's ATIF trajectory is saved (``actors.trajectories``); None: not saved."""
        self.trajectories_failed = 0
        """Trajectories that could not be fetched or written (logged; the rollouts went on)."""

    def run(self, request: RolloutRequest) -> RolloutOutcome:
        start = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.work_root))
        try:
            return self._run(request, work, start)
        except Exception as exc:  # infrastructure: the pool decides whether to retry
            return RolloutOutcome(
                request.rollout_id,
                request.group_id,
                failure=f"{type(exc).__name__}: {exc}",
                duration_s=time.monotonic() - start,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _run(self, request: RolloutRequest, work: Path, start: float) -> RolloutOutcome:
        task = request.task
        launcher = harness_spec(request.harness).launcher  # an unknown harness: the error names the known
        timings: dict[str, float] = {}
        workspace = write_start(task, work / "start")
        start_state = take_snapshot(workspace)
        path = self.guard.open(
            request.rollout_id,
            request.harness,
            request.adapter,
            task.allowed_hosts,
            protected=protected_paths(task),
        )
        limits = SandboxLimits(task.limits.memory_mb, task.limits.max_processes, task.limits.cpus)
        spec = LaunchSpec(
            workspace=workspace,
            instruction=task.instruction,
            base_url=f"http://{self.guard.host}:{self.guard.port}{path}",
            model=request.adapter,
            timeout_s=task.limits.agent_timeout_s,
            max_tokens=self.max_tokens,
        )
        sockets = Path(tempfile.mkdtemp(prefix="hxr"))  # unix socket paths must stay short
        record: dict = {}
        launched: LaunchResult | None = None
        error = ""
        try:
            with UnixToTcp(
                sockets / "guard.sock", self.guard.port, host=self.guard.host, allowed_prefix=path
            ) as forward:
                box = self.backend.create(  # raises before the harness starts: a host failure, retried
                    workspace,
                    limits,
                    forwards=(Forward(FORWARD_PORT, forward.path),),
                    read_only=protected_paths(task),
                    placement=task.placement.for_agent(),
                )
                try:
                    launched = launch_in_sandbox(
                        launcher(),
                        spec,
                        box,
                        forward_port=FORWARD_PORT,
                        run_dir=work / "run",
                        collect_to=work / "produced",
                    )
                except Exception as exc:  # the harness ran: judged below with the guard's record
                    error = f"{type(exc).__name__}: {str(exc)[:300]}"
                finally:
                    try:
                        box.destroy()
                    except Exception as exc:
                        error = error or f"destroy: {type(exc).__name__}: {str(exc)[:300]}"
                refused_outside = forward.refused_outside
                unreachable = forward.guard_unreachable
        finally:
            if self.trajectories is not None:
                saved = save_rollout_trajectory(self.guard.atif, request.rollout_id, self.trajectories)
                self.trajectories_failed += saved is None
            try:
                record = self.guard.close(request.rollout_id)
            except RecordMissing:
                record = {"missing": True}
            shutil.rmtree(sockets, ignore_errors=True)
        timings["session_s"] = time.monotonic() - start
        judged = judge_session(SessionEnd(record, launched, error, unreachable))
        if judged is not None and judged.retry:
            raise HostFailure(f"{request.harness}: {judged.reason}")
        audit = safe_audit(task, start_state, work / "produced")
        if refused_outside:  # a tool call tried the guard's rollout API or another rollout's route
            audit = AuditResult(
                audit.flags + (Flag("network", "guard_api_probed", f"{refused_outside} refused"),)
            )
        if judged is not None:  # scored 0 whatever the verifier would say: no need to run it
            verified = OracleRun(Verdict.ERROR, f"not verified: {judged.reason}")
        else:
            verified = verify(task, work / "produced", work / "verify", SandboxRunner(self.backend))
        timings["verify_s"] = time.monotonic() - start - timings["session_s"]
        harness_calls = launched.tool_calls if launched is not None else None
        return score_rollout(
            request,
            verified,
            audit,
            record,
            harness_calls,
            time.monotonic() - start,
            timings,
            session_error=judged.reason if judged is not None else "",
        )


class HostFailure(RuntimeError):
    """A session failure the host proved is its own (``judge_session``): the pool retries the rollout."""


def safe_audit(task: Task, start_state, produced: Path) -> AuditResult:
    """The effect audit of the collected workspace; a failure to even take its snapshot is the flag
    ``audit_error`` (reward 0), never an exception that would make the rollout a retried failure."""
    try:
        return audit_effects(task, start_state, take_snapshot(produced))
    except Exception as exc:
        return AuditResult((Flag("workspace", "audit_error", f"{type(exc).__name__}: {str(exc)[:160]}"),))


def score_rollout(
    request: RolloutRequest,
    verified: OracleRun,
    audit: AuditResult,
    record: dict,
    harness_tool_calls: int | None,
    duration_s: float,
    timings: dict[str, float],
    *,
    session_error: str = "",
) -> RolloutOutcome:
    """The outcome of a session that ran to its end: reward from the verdict, the guard's record and the
    effect audit. A missing guard record scores 0 like a block; a verdict ``error`` scores 0 (never a
    retry); a tampered rollout scores 0 whatever the verdict; so does a ``session_error`` (a session end
    the agent could have caused, ``judge_session``). Only blocks the guard enforced zero the reward: the
    would-be blocks of a guard in monitor mode and the notices of findings held at notice
    (``record["would_block"]``, ``serve.precision``) are only reported."""
    missing = bool(record.get("missing"))
    blocked = bool(record.get("blocked")) or missing
    tool_calls = int(record.get("tool_calls", 0))
    score = 1.0 if verified.verdict is Verdict.PASS else 0.0
    reward = (
        0.0 if session_error else compute_reward(RewardInputs(score, tool_calls, blocked, audit.tampered))
    )
    reasons = tuple(f"{b['rule']}: {b['reason']}" for b in record.get("blocks", []))
    would = tuple(
        f"{b['rule']}: {b['reason']}" + (" (notice)" if b.get("notice") else "")
        for b in record.get("would_block", [])
    )
    if missing:
        reasons += ("record_missing: the guard's record of this rollout was closed or deleted early",)
    return RolloutOutcome(
        request.rollout_id,
        request.group_id,
        reward=reward,
        verdict=verified.verdict.value,
        verifier_reason=verified.reason,
        judge=verified.judge,
        tool_calls=tool_calls,
        harness_tool_calls=harness_tool_calls,
        blocked=blocked,
        block_reasons=reasons,
        would_block_reasons=would,
        tampered=audit.tampered,
        tamper_flags=tuple(str(f) for f in audit.flags),
        rows=() if missing else tuple(rollout_rows(turns_from_record(record))),
        duration_s=duration_s,
        timings=timings,
        session_error=session_error,
    )


@dataclass(frozen=True, slots=True)
class RolloutSetup:
    """Where a trainer's rollouts run: the guard, the sandbox backend, the session hosts (the tasks travel
    apart: every rollout actor gets a copy of this, and needs none of them)."""

    guard_url: str
    rollouts: RolloutSettings = RolloutSettings()
    """Sandbox, sessions in flight, output tokens, actors or threads, their CPUs: a job's ``rollouts``
    section, whole."""
    work_root: str = ""
    trajectory_dir: str = ""
    """Where each rollout's ATIF trajectory is saved as ``<rollout_id>.json`` ("": not saved)."""


def make_rollout_session(setup: RolloutSetup, harness: str, root: str) -> RolloutSession:
    """The session a rollout actor (or a pool thread) holds: the sandbox backend ``setup`` names, with the
    harness installs bound read-only, and the guard's HTTP API."""
    from environments.harnesses import harness_binds

    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    from environments.sandboxes import backend_named
    from environments.sandboxes.protocol import DEFAULT_PREFIX

    prefix = f"hx{harness[:2]}" if setup.rollouts.sandbox == "local" else DEFAULT_PREFIX
    backend: SandboxBackend = backend_named(
        setup.rollouts.sandbox, folder / "boxes", prefix=prefix, extra_ro_binds=harness_binds()
    )
    trajectories: Path | str | None = None
    if setup.trajectory_dir:  # a storage URI stays a string: written there from whichever node
        trajectories = setup.trajectory_dir if "://" in setup.trajectory_dir else Path(setup.trajectory_dir)
    return RolloutSession(
        backend,
        GuardHTTP(setup.guard_url),
        folder,
        max_tokens=setup.rollouts.max_tokens,
        trajectories=trajectories,
    )
