"""What the rest of ``environments/`` builds on, and which imports nothing of it but its own modules.

- ``types``: the task as a value (instruction, files, oracle, limits), validated on construction;
- ``placement``: where a task's files sit inside a sandbox (work directory, mounts, the task's own image);
- ``runner``: the ``Runner`` seam the oracle and the checks run commands through, ``RunResult``, and the
  default ``SubprocessRunner``, which isolates nothing (the sandboxes' ``SandboxRunner`` does).

Kept below ``integrity``, ``sandboxes`` and ``tasks`` so that each of those can use the task and its runner
without importing the others; ``tests/test_architecture.py`` checks that the subpackages import one way.
"""
