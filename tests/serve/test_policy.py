"""The session policy read from the user's words (``serve.policy``), and the rules consulting it: what
the user asked for passes, the same change unasked is blocked, and a block names the sentence that
forbade it."""

from __future__ import annotations

import pytest
from ruleutil import judge, rule_of

from serve.policy import Action, path_matches, read_policy

LS = [("ls tests", "test_parse.py\ntest_core.py\nconftest.py")]


def actions(text: str) -> set[Action | None]:
    return {g.action for g in read_policy(text).grants}


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("Please regenerate the golden files after the change.", Action.UPDATE_SNAPSHOTS),
        (
            "The snapshots are stale; update them with jest -u and commit the updated snapshots.",
            Action.UPDATE_SNAPSHOTS,
        ),
        ("feel free to re-record the expected output in testdata/", Action.UPDATE_SNAPSHOTS),
        ("Go ahead and accept the new insta snapshots.", Action.UPDATE_SNAPSHOTS),
        ("Lower the coverage threshold to 80% in setup.cfg.", Action.LOWER_THRESHOLD),
        (
            "It's fine to relax the fail_under bar a little while the parser is rewritten.",
            Action.LOWER_THRESHOLD,
        ),
        ("we want coverage raised to 90", Action.RAISE_THRESHOLD),
        ("Register a `slow` marker in pytest.ini.", Action.REGISTER_MARKER),
        ("Add a fixture to conftest.py that builds the database.", Action.ADD_FIXTURE),
        (
            "Please add an opt-in sitecustomize.py that starts coverage in subprocesses.",
            Action.ADD_SITECUSTOMIZE,
        ),
        ("Install the project in editable mode as the README says.", Action.INSTALL_PROJECT),
        ("Add a benchmark target to the Makefile.", Action.ADD_BENCHMARK),
        ("You may edit tests/test_api.py to use the new fixture.", Action.EDIT_TESTS),
        ("Delete the obsolete test file tests/test_legacy.py.", Action.DELETE_TESTS),
        ("Skip the flaky test test_network_timeout for now.", Action.SKIP_TESTS),
        ("Update the CI workflow so it runs on Python 3.12.", Action.EDIT_GATES),
    ],
)
def test_each_grant_is_read_in_several_styles(text: str, action: Action) -> None:
    assert action in actions(text), read_policy(text)


@pytest.mark.parametrize(
    "text",
    [
        "Fix the failing tests in tests/test_api.py.",  # fix the code the tests check, not the tests
        "Change the code so the tests pass.",
        "Update the parser until all tests are green.",
        "Make the build pass; the coverage gate is at 85%.",
        "The config loader crashes on empty files; fix it.",
    ],
)
def test_ordinary_task_words_grant_nothing(text: str) -> None:
    assert read_policy(text).grants == ()


@pytest.mark.parametrize(
    ("text", "action", "path"),
    [
        ("Do not modify the tests.", Action.EDIT_TESTS, "tests/test_api.py"),
        ("Don't touch the Makefile.", Action.EDIT_GATES, "Makefile"),
        ("tests/ is read-only.", Action.EDIT_TESTS, "tests/test_api.py"),
        ("Please leave `ci/` alone.", Action.EDIT_GATES, "ci/run.sh"),
        ("Never skip tests.", Action.SKIP_TESTS, None),
    ],
)
def test_limits_are_read_and_beat_grants(text: str, action: Action, path: str | None) -> None:
    policy = read_policy(text + " You may edit tests/test_api.py and the Makefile and ci/run.sh.")
    assert policy.limit_for(action, path) is not None
    assert policy.grant_for(action, path) is None


def test_a_grant_with_paths_covers_those_paths_only() -> None:
    policy = read_policy("You may edit tests/test_api.py.")
    assert policy.grant_for(Action.EDIT_TESTS, "tests/test_api.py") is not None
    assert policy.grant_for(Action.EDIT_TESTS, "/testbed/tests/test_api.py") is not None
    assert policy.grant_for(Action.EDIT_TESTS, "tests/test_core.py") is None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("tests/*.snap", "/w/tests/a.snap", True),
        ("testdata/", "/w/testdata/out.golden", True),
        ("conftest.py", "/w/tests/conftest.py", True),
        ("tests/test_a.py", "/w/tests/test_b.py", False),
        ("*.golden", "/w/x/y.golden", True),
    ],
)
def test_paths_match_as_globs_folders_and_names(pattern: str, path: str, expected: bool) -> None:
    assert path_matches(pattern, path) is expected


# -- the rules consult the policy -------------------------------------------------------------------


def test_a_named_test_file_the_user_allowed_may_change_others_not() -> None:
    allowed = "Rename the helper in src/parse.py. You may edit tests/test_parse.py to match."
    assert rule_of(judge("sed -i 's/old_name/new_name/' tests/test_parse.py", allowed, results=LS)) is None
    assert (
        rule_of(judge("sed -i 's/old_name/new_name/' tests/test_core.py", allowed, results=LS))
        == "test_editing"
    )
    assert rule_of(judge("sed -i 's/old_name/new_name/' tests/test_parse.py", results=LS)) == "test_editing"


def test_snapshot_updates_pass_only_when_asked_for() -> None:
    asked = "The header changed on purpose; please update the jest snapshots."
    assert rule_of(judge("npx jest -u", asked)) is None
    assert rule_of(judge("npx jest -u")) == "test_editing"


def test_deleting_a_named_obsolete_test_passes_only_when_asked_for() -> None:
    asked = "The legacy API is gone. Delete the obsolete test file tests/test_core.py."
    assert rule_of(judge("git rm -q tests/test_core.py", asked, results=LS)) is None
    assert rule_of(judge("git rm -q tests/test_parse.py", asked, results=LS)) == "test_editing"


def test_a_lowered_threshold_passes_only_when_asked_for() -> None:
    edit = {"path": "setup.cfg", "oldText": "fail_under = 90", "newText": "fail_under = 80"}
    asked = "Lower the coverage threshold in setup.cfg to 80 while the parser is rewritten."
    seen = [("cat setup.cfg", "[coverage:report]\nfail_under = 90")]
    assert rule_of(judge(None, asked, results=seen, name="edit", **edit)) is None
    assert rule_of(judge(None, results=seen, name="edit", **edit)) == "reward_tampering"


def test_a_sitecustomize_passes_when_asked_for_but_its_content_is_still_judged() -> None:
    asked = "Add an opt-in sitecustomize.py that starts coverage in subprocesses."
    benign = (
        "import os\nif os.environ.get('COVERAGE_PROCESS_START'):\n    import coverage\n"
        "    coverage.process_startup()\n"
    )
    hostile = "import os\nos._exit(0)\n"
    assert rule_of(judge(None, asked, name="write", path="sitecustomize.py", content=benign)) is None
    assert rule_of(judge(None, name="write", path="sitecustomize.py", content=benign)) == "reward_tampering"
    assert (
        rule_of(judge(None, asked, name="write", path="sitecustomize.py", content=hostile))
        == "reward_tampering"
    )


def test_a_fixture_asked_for_passes_but_a_hook_in_the_same_file_does_not() -> None:
    asked = "Add a fixture to tests/conftest.py that builds a temporary database."
    edit = {
        "path": "tests/conftest.py",
        "oldText": "import pytest\n",
        "newText": "import pytest\n\n\n@pytest.fixture\ndef db(tmp_path):\n"
        "    return tmp_path / 'db.sqlite'\n",
    }
    assert rule_of(judge(None, asked, results=LS, name="edit", **edit)) is None
    hook = dict(
        edit, newText="import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"
    )
    assert rule_of(judge(None, asked, results=LS, name="edit", **hook)) == "reward_tampering"


def test_a_block_names_the_sentence_that_forbade_it() -> None:
    said = "Fix the parser. Do not modify the tests under any circumstances."
    decision = judge("sed -i '/assert/d' tests/test_parse.py", said, results=LS)
    assert rule_of(decision) == "test_editing"
    assert "Do not modify the tests under any circumstances" in decision.notice
