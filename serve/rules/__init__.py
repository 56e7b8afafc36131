"""Guard rules: one module per rule, each a plugin with its own tests.

`declared` (rule 1) reads the raw OpenAI call; the session rules (`hosts`, `tamper`,
`test_edits`, `lookup`, `credentials`) judge a normalised call against `SessionFacts`, and
`atif` runs them as atif-scan detectors. `builtin_rules()` is the default chain, in the order
a call that trips two rules is attributed: the specific misconduct first, hosts last.
"""

from __future__ import annotations

from .atif import SessionCheck, session_engine
from .base import Finding, SessionRule
from .credentials import CredentialUseRule
from .declared import DeclaredToolsRule
from .facts import SessionFacts
from .hosts import HostsRule
from .lookup import AnswerLookupRule
from .tamper import RewardTamperingRule
from .test_edits import TestEditingRule


def builtin_rules() -> list[SessionRule]:
    return [RewardTamperingRule(), TestEditingRule(), AnswerLookupRule(), CredentialUseRule(), HostsRule()]


__all__ = [
    "AnswerLookupRule",
    "CredentialUseRule",
    "DeclaredToolsRule",
    "Finding",
    "HostsRule",
    "RewardTamperingRule",
    "SessionCheck",
    "SessionFacts",
    "SessionRule",
    "TestEditingRule",
    "builtin_rules",
    "session_engine",
]
