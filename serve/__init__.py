"""The guard: rules that check every tool call a model makes (pure; the proxy comes later)."""

from __future__ import annotations

from .decisions import Allow, Block, Decision, Reason, RuleId, Unknown, Verdict, verdict
from .engine import GuardConfig, GuardSession, check_case
from .normalize import NormalCall, ToolKind, normalize

__all__ = [
    "Allow",
    "Block",
    "Decision",
    "GuardConfig",
    "GuardSession",
    "NormalCall",
    "Reason",
    "RuleId",
    "ToolKind",
    "Unknown",
    "Verdict",
    "check_case",
    "normalize",
    "verdict",
]
