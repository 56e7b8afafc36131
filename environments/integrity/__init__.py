"""Reward integrity: the verdict and the reward stay right whatever the agent did to its workspace.

- ``snapshot``: a workspace as data, read without following links or opening special files;
- ``paths``: which paths decide a verdict (tests, runner configuration, graders, shadowing files);
- ``surface``: what the verifier takes from the agent, and the fresh tree it judges;
- ``reports``: structured test reports and what they must show for a pass;
- ``runner_verdict``: the reporter inside pytest and unittest runs that writes it and notices a patched
  runner;
- ``probe``: the output-only oracle (a judge that never imports the solution code it compares);
- ``config_diff``: whether an edit of a shared project file touches the runner's part;
- ``content``: solution code that reaches into the runner or the interpreter;
- ``audit``: the effect audit (start state vs final workspace) that flags a rollout ``tampered``.
"""

from environments.integrity.audit import AuditResult, Flag, audit_effects
from environments.integrity.paths import PathClass, PathRules, classify_path, protected_paths
from environments.integrity.snapshot import Entry, EntryKind, Snapshot, take_snapshot
from environments.integrity.surface import Surface, build_verify_tree, solution_surface

__all__ = [
    "AuditResult",
    "Entry",
    "EntryKind",
    "Flag",
    "PathClass",
    "PathRules",
    "Snapshot",
    "Surface",
    "audit_effects",
    "build_verify_tree",
    "classify_path",
    "protected_paths",
    "solution_surface",
    "take_snapshot",
]
