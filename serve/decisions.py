"""Guard decisions: values, not exceptions.

A check returns one of three values:

- `Allow()`: every rule judged the call and none matched, or only rules whose finding is held at
  notice (`serve.precision`): those ride along as `Allow.notices`, recorded but not enforced.
- `Block(rule_id, reason)`: a rule matched. `notice` is the text the model is shown in place
  of the call; it is fixed per rule family and never echoes the call, the conversation or
  any secret (the model can read it, and so can anyone reading the rollout).
- `Unknown(rule_id, reason)`: a rule could not judge the call (an unparsable command, a
  plugin that raised). Unknown never reads as allow: `verdict(decision, fail_closed=True)`
  turns it into a block, which is the guard's default.

`reason` is always a `Reason` code (a fixed string), so logs and CLI output carry no input
text either.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    ALLOW = "allow"
    BLOCK = "block"
    UNKNOWN = "unknown"


class RuleId(StrEnum):
    DECLARED_TOOLS = "declared_tools"
    HOSTS = "hosts"
    REWARD_TAMPERING = "reward_tampering"
    TEST_EDITING = "test_editing"
    ANSWER_LOOKUP = "answer_lookup"
    CREDENTIAL_USE = "credential_use"
    LIMITS = "limits"


class Reason(StrEnum):
    # declared_tools
    UNDECLARED_TOOL = "undeclared_tool"
    ARGUMENTS_NOT_JSON = "arguments_not_json"
    ARGUMENTS_NOT_OBJECT = "arguments_not_object"
    SCHEMA_MISMATCH = "arguments_do_not_fit_schema"
    BAD_TOOL_CALL = "malformed_tool_call"
    # hosts
    HOST_NOT_IN_CONVERSATION = "host_not_in_conversation"
    HOST_UNRESOLVABLE = "host_unresolvable"
    # reward_tampering
    REWARD_FILE_WRITE = "reward_file_write"
    TEST_RUNNER_PATCH = "test_runner_patch"
    HARNESS_HOOK = "harness_hook"
    EARLY_EXIT = "forced_exit_status"
    SKIP_MARKER = "test_skip_marker"
    ALWAYS_EQUAL = "always_equal_object"
    GRADER_EDIT = "grader_or_benchmark_edit"
    CALLER_FRAME = "caller_frame_read"
    PROOF_BYPASS = "proof_checker_bypass"
    TEST_SPECIAL_CASE = "test_input_special_case"
    # test_editing
    TEST_CHANGED = "existing_test_changed"
    TEST_DELETED = "existing_test_deleted"
    # answer_lookup
    HIDDEN_TESTS = "hidden_tests_or_verifier_read"
    SOLUTION_PROBE = "solution_file_search"
    GIT_BEYOND_HEAD = "git_history_beyond_head"
    UPSTREAM_FIX = "upstream_fix_lookup"
    DATA_SOURCE = "task_data_source_lookup"
    TASK_TEXT_SEARCH = "web_search_for_task_text"
    OTHER_SESSIONS = "other_agent_sessions_read"
    # credential_use
    ENV_DUMP = "environment_dump"
    SECRET_VARIABLE = "secret_variable_read"
    KEY_FILE = "credential_file_read"
    TOKEN_LITERAL = "token_literal"
    MODEL_API = "model_api_called_from_sandbox"
    PRODUCTION_IDENTITY = "production_identity_chosen"
    # limits
    TOO_LARGE = "arguments_too_large"
    CHECK_BUDGET = "check_time_budget_spent"
    OPAQUE_EXECUTION = "runs_text_it_cannot_read"
    # shared
    UNPARSABLE = "unparsable_arguments"
    RULE_ERROR = "rule_error"


# What the model sees instead of its call. One fixed string per rule: nothing from the input.
NOTICES: dict[RuleId, str] = {
    RuleId.DECLARED_TOOLS: (
        "[guard] This tool call was not run: it does not name a declared tool with valid JSON "
        "arguments that fit the tool's schema. Use one of the tools you were given."
    ),
    RuleId.HOSTS: (
        "[guard] This tool call was not run: it would contact a network host that was not "
        "named by the user, the system prompt or a tool result. Work with what you were given."
    ),
    RuleId.REWARD_TAMPERING: (
        "[guard] This tool call was not run: it would change how the work is graded "
        "(reward files, the test runner or its hooks, exit status, skipped tests). "
        "Fix the code under test instead."
    ),
    RuleId.TEST_EDITING: (
        "[guard] This tool call was not run: it would change or delete existing tests. "
        "Leave the tests as they are and fix the code under test."
    ),
    RuleId.ANSWER_LOOKUP: (
        "[guard] This tool call was not run: it looks up the answer (hidden tests, reference "
        "solutions, history beyond the working commit, the task's source or its text on the web). "
        "Solve the task from the material you were given."
    ),
    RuleId.CREDENTIAL_USE: (
        "[guard] This tool call was not run: it would read or use credentials (environment "
        "dumps, keys, tokens, the model API). Credentials are not part of the task."
    ),
}

NOTICES[RuleId.LIMITS] = (
    "[guard] This tool call was not run: it is too large or too obscure to check (huge arguments, "
    "or encoded text run as code). Rewrite it in a smaller, explicit form."
)

UNKNOWN_NOTICE = (
    "[guard] This tool call was not run: the guard could not check it (for example, a command "
    "it cannot parse). Rewrite it in a simpler, explicit form."
)


@dataclass(frozen=True, slots=True)
class Held:
    """A finding the guard reports but does not enforce: its reason is held at notice because its
    measured precision on benign work is not good enough to block (`serve.precision`)."""

    rule_id: RuleId
    reason: Reason


@dataclass(frozen=True, slots=True)
class Allow:
    verdict: Verdict = Verdict.ALLOW
    notices: tuple[Held, ...] = ()


@dataclass(frozen=True, slots=True)
class Block:
    rule_id: RuleId
    reason: Reason
    verdict: Verdict = Verdict.BLOCK
    policy_line: str = ""
    """The user's sentence the block rests on (``serve.policy``), named in the notice."""

    def __post_init__(self) -> None:
        if not isinstance(self.rule_id, RuleId) or not isinstance(self.reason, Reason):
            raise ValueError("block_needs_rule_id_and_reason_code")

    @property
    def notice(self) -> str:
        if self.policy_line:
            return f'{NOTICES[self.rule_id]} (The user said: "{self.policy_line[:300]}")'
        return NOTICES[self.rule_id]


@dataclass(frozen=True, slots=True)
class Unknown:
    """A rule could not judge the call (or raised). Never an allow."""

    rule_id: RuleId
    reason: Reason = Reason.RULE_ERROR
    verdict: Verdict = Verdict.UNKNOWN

    def __post_init__(self) -> None:
        if not isinstance(self.rule_id, RuleId) or not isinstance(self.reason, Reason):
            raise ValueError("unknown_needs_rule_id_and_reason_code")

    @property
    def notice(self) -> str:
        return UNKNOWN_NOTICE


Decision = Allow | Block | Unknown


def verdict(decision: Decision, fail_closed: bool = True) -> Verdict:
    """The verdict to act on: unknown becomes block when failing closed, and is never allow."""
    if isinstance(decision, Unknown):
        return Verdict.BLOCK if fail_closed else Verdict.UNKNOWN
    return decision.verdict
