"""The guard: rules that check every tool call a model makes, and the proxy that applies them.

The proxy (`serve.proxy.GuardProxy`, `serve.app.build_app`) is imported from its module, so that
`import serve` stays free of HTTP and Ray."""

from __future__ import annotations

from .decisions import Allow, Block, Decision, Reason, RuleId, Unknown, Verdict, verdict
from .engine import GuardConfig, GuardSession, check_case
from .mode import GuardMode
from .normalize import NormalCall, ToolKind, normalize
from .record import OTHER_HARNESS, BlockRecord, RolloutRecord, TurnRecord, UpstreamError
from .toolcalls import ToolCall, ToolCallAssembler

__all__ = [
    "Allow",
    "Block",
    "BlockRecord",
    "Decision",
    "GuardConfig",
    "GuardMode",
    "GuardSession",
    "NormalCall",
    "OTHER_HARNESS",
    "Reason",
    "RolloutRecord",
    "RuleId",
    "ToolCall",
    "ToolCallAssembler",
    "ToolKind",
    "TurnRecord",
    "Unknown",
    "UpstreamError",
    "Verdict",
    "check_case",
    "normalize",
    "verdict",
]
