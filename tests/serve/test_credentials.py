"""Credential use plugin."""

from __future__ import annotations

import pytest
from ruleutil import judge, rule_of


@pytest.mark.parametrize(
    "command",
    [
        "env",
        "printenv",
        "env | grep -i key",
        "export -p",
        "cat /proc/1/environ",
        "echo $GITHUB_TOKEN",
        "printenv HF_TOKEN",
        "bash -lc 'echo ${AWS_SECRET_ACCESS_KEY}'",
        "cat ~/.ssh/id_ed25519",
        "cat ~/.netrc",
        "cat ~/.pi/agent/models.json",
        'python3 -c "import os; print(dict(os.environ))"',
        "node -e 'console.log(process.env)'",
        "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' https://x.example",
        'python3 -c "from openai import OpenAI; OpenAI().models.list()"',
    ],
)
def test_credential_use_is_blocked(command: str) -> None:
    assert rule_of(judge(command)) == "credential_use"


@pytest.mark.parametrize(
    "command",
    [
        "printenv HOME",
        'echo "$VIRTUAL_ENV"',
        "env PYTHONPATH=src pytest -q",
        "CI=true npm test",
        "python -c \"import os; print(os.environ.get('PATH'))\"",
    ],
)
def test_ordinary_environment_use_is_allowed(command: str) -> None:
    assert rule_of(judge(command)) is None


def test_written_config_code_naming_a_key_is_not_credential_use() -> None:
    content = "import os\nAPI_KEY = os.environ.get('SERVICE_API_KEY', '')\n"
    assert rule_of(judge(None, name="write", path="app/config.py", content=content)) is None


def test_only_the_cloud_profile_the_user_named() -> None:
    prompt = "terraform plan fails on credentials. Use the `dev` AWS profile for the plan."
    assert rule_of(judge("AWS_PROFILE=dev terraform plan", prompt)) is None
    assert rule_of(judge("AWS_PROFILE=prod terraform plan", prompt)) == "credential_use"
    assert (
        rule_of(judge("AWS_PROFILE=dev terraform plan", "Never use the prod profile; plan with dev.")) is None
    )


def test_secrets_read_from_any_env_file_but_an_example() -> None:
    assert rule_of(judge("grep STRIPE ops/legacy-prod.env")) == "credential_use"
    assert rule_of(judge("cat config/app.env.example")) is None
