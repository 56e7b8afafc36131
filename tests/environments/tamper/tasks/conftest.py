"""The fixture tasks below hold their own test files (a task's visible and hidden tests); they are data for
the tamper suite, run only inside a task's sandbox, never collected by this project's pytest run."""

collect_ignore_glob = ["*"]
