"""Fixtures for the real-harness tests: one scripted upstream and one standalone guard
(``python -m serve``) in front of it, both on 127.0.0.1, shared by the module's tests; each test
opens its own rollout and sets the upstream's script. ``docker_api`` is the Docker engine with the
sandbox image built (``source scripts/sandbox-deps.sh`` starts one), or a skip that says why not."""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from environments.harnesses import install_root
from serve.standalone import guard_subprocess
from tests.environments.harnesses.scripted_upstream import Say, ScriptedUpstream
from tests.environments.sandboxes.conftest import docker_or_skip

REPO = Path(__file__).resolve().parents[3]


def harnesses_missing() -> str | None:
    root = install_root()
    if not (root / ".stamp").exists():
        return f"the harnesses are not installed in {root}: run scripts/harness-deps.sh"
    return None


def http_json(method: str, url: str, payload: object | None = None) -> tuple[int, dict]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@dataclass
class Guard:
    url: str
    port: int
    upstream: ScriptedUpstream
    log: Path

    def open_rollout(self, rollout_id: str, harness: str, adapter: str) -> str:
        """Open a rollout; returns the OpenAI base URL the harness gets."""
        status, body = http_json(
            "POST", f"{self.url}/rollouts", {"rollout_id": rollout_id, "harness": harness, "adapter": adapter}
        )
        assert status == 201, body
        return f"{self.url}/s/{rollout_id}/v1"

    def record(self, rollout_id: str) -> dict:
        status, body = http_json("GET", f"{self.url}/rollouts/{rollout_id}")
        assert status == 200, body
        return body


@pytest.fixture(scope="module")
def docker_api():
    """The Docker engine with the sandbox image; requested only by docker runs."""
    return docker_or_skip()


def guard_process(upstream_url: str, log: Path) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """A standalone guard (``python -m serve``) in front of ``upstream_url``; yields (URL, port)."""
    return guard_subprocess(upstream_url, log)


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guard]:
    missing = harnesses_missing()
    if missing:
        pytest.skip(missing)
    upstream = ScriptedUpstream([Say("nothing scripted")]).start()
    log = tmp_path_factory.mktemp("guard") / "guard.log"
    try:
        with guard_process(upstream.base_url, log) as (url, port):
            yield Guard(url, port, upstream, log)
    finally:
        upstream.stop()
