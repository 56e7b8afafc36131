"""How a job's harness sessions run (its ``rollouts`` section): pure, so the config checks them at load.
The rollout sessions (``actors.rollout.RolloutSetup``) and the pool hold them whole; the guard applies the
sampling temperature (``serve.proxy.ProxyConfig``, which checks it with the same function)."""

from __future__ import annotations

from dataclasses import dataclass

SANDBOXES = ("local", "docker")


def temperature_problem(temperature: object) -> str | None:
    """What is wrong with a job's sampling temperature (None: the server's default), naming the fix."""
    if temperature is None:
        return None
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2:
        return f"temperature={temperature!r}: a number from 0 (greedy) to 2, or null for the server's default"
    return None


@dataclass(frozen=True, slots=True)
class RolloutSettings:
    sandbox: str = "local"
    """``local`` (bubblewrap) or ``docker``: where every session's harness and verifier run (``docker`` is
    needed for tasks that build their own image)."""
    max_sessions: int = 48
    """Harness sessions in flight per harness (a trainer's: at most 48, and at least its group size)."""
    max_tokens: int = 4096
    """Output tokens per model turn (the harness's request may ask for fewer)."""
    actors: bool = True
    """Sessions as Ray rollout actors, one per session slot in a CPU placement group (False: threads in
    the trainer's or the evaluation's process)."""
    cpus: float = 1.0
    """CPUs reserved per rollout actor (its harness, sandbox and verifier)."""
    temperature: float | None = None
    """Sampling temperature of every session's turns, set by the guard (none of the harnesses sends one;
    0: greedy); null: the server's default (1.0 unless the model's generation config says otherwise). A
    trainer's log-probs stay those of the untempered policy."""
    constrain_tool_calls: bool = False
    """Decode every tool call under a grammar of the request's declared tools and their argument schemas
    (vLLM structured outputs, set by the guard: ``serve.grammar``), so a call can only be one the
    declared-tools rule accepts. For a model too small to write its harness's calls reliably; needs a
    tool-call parser the guard writes grammars for (hermes)."""
    max_turns: int = 0
    """Model turns per session at most: the guard refuses the next request (HTTP 400,
    ``rollout_turn_limit``), the harness stops, and the session is scored as it ended. Bounds the time a
    looping model spends; 0: the guard's own bound (1024)."""

    def __post_init__(self) -> None:
        problems = []
        if self.sandbox not in SANDBOXES:
            problems.append(f"sandbox={self.sandbox!r}: use local or docker")
        if self.max_sessions < 1:
            problems.append(f"max_sessions={self.max_sessions}: must be >= 1")
        if self.max_tokens < 1:
            problems.append(f"max_tokens={self.max_tokens}: must be >= 1")
        if self.max_turns < 0:
            problems.append(f"max_turns={self.max_turns}: must be >= 0 (0: the guard's own bound)")
        if self.cpus <= 0:
            problems.append(f"cpus={self.cpus}: must be > 0 (a placement-group bundle)")
        if problem := temperature_problem(self.temperature):
            problems.append(problem)
        if problems:
            raise ValueError("; ".join(problems))
