"""The guard as deployed: `python -m serve` standalone, and the Ray Serve deployment (slow)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from proxyutil import ThreadServer, chat_request, fake_upstream_app, free_port, parse_sse

from serve.decisions import NOTICES, RuleId

REPO = Path(__file__).resolve().parents[2]


def _wait_healthy(url: str, proc: subprocess.Popen | None = None, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"guard exited early: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"guard at {url} not healthy after {timeout_s} s")


def test_standalone_guard_blocks_per_api_key_and_logs_rule_and_reason():
    with ThreadServer(fake_upstream_app()) as upstream:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "serve", "--upstream", f"{upstream}/v1", "--port", str(port)],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            guard = f"http://127.0.0.1:{port}"
            _wait_healthy(guard, proc)
            headers = {"authorization": "Bearer sk-mine"}
            response = httpx.post(
                f"{guard}/v1/chat/completions", json=chat_request(), headers=headers, timeout=30
            )
            by_path = httpx.post(f"{guard}/s/abc/v1/chat/completions", json=chat_request(False), timeout=30)
            probe = httpx.get(f"{guard}/api/v1/models", timeout=30)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
    events = parse_sse(response.content)
    assert response.status_code == 200 and events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-2])
    assert text.endswith(NOTICES[RuleId.HOSTS])
    assert by_path.json()["choices"][0]["message"]["content"].endswith(NOTICES[RuleId.HOSTS])
    assert probe.json()["data"][0]["id"] == "base"
    assert err.count("guard block") == 2 and "rule=hosts reason=host_not_in_conversation" in err


@pytest.mark.slow
def test_ray_serve_deployment_guards_a_request_over_http(ray_cluster):
    from ray import serve

    from serve.app import build_app
    from serve.proxy import ProxyConfig

    with ThreadServer(fake_upstream_app()) as upstream:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        try:
            app = build_app(ProxyConfig(f"{upstream}/v1"), ray_actor_options={"num_cpus": 0})
            serve.run(app, name="guard", route_prefix="/", blocking=False)
            guard = f"http://127.0.0.1:{port}"
            _wait_healthy(guard, timeout_s=120)
            spec = {"rollout_id": "r1", "harness": "hermes", "adapter": "hm-v1"}
            assert httpx.post(f"{guard}/rollouts", json=spec, timeout=30).status_code == 201
            response = httpx.post(f"{guard}/s/r1/v1/chat/completions", json=chat_request(), timeout=60)
            record = httpx.delete(f"{guard}/rollouts/r1", timeout=30).json()
        finally:
            serve.shutdown()
    events = parse_sse(response.content)
    assert response.status_code == 200 and events[-1] == "[DONE]" and events[-2]["choices"] == []
    assert record["blocked"] and record["blocks"][0]["rule"] == "hosts"
    assert record["turns"][0]["prompt_ids"] == [1, 2, 3, 4]


@pytest.mark.slow
def test_guard_shards_keep_their_rollouts_apart_under_their_own_routes(ray_cluster):
    """Two shards (``jobs.stack.guard_app``), as the train job deploys one per trainer: a rollout opened
    through one shard's URL is served under that shard's route and is unknown to the other shard."""
    from ray import serve

    from actors.rollout import GuardHTTP
    from jobs.stack import guard_app, replica_nodes
    from serve.settings import GuardSettings

    with ThreadServer(fake_upstream_app()) as upstream:
        port = free_port()
        try:
            urls = {
                shard: guard_app(f"{upstream}/v1", GuardSettings(port=port, proxy="every_node"), shard)
                for shard in ("pi", "hermes")
            }
            assert urls["pi"] == f"http://127.0.0.1:{port}/pi"
            _wait_healthy(urls["pi"], timeout_s=120)
            pi, hermes = GuardHTTP(urls["pi"]), GuardHTTP(urls["hermes"])
            path = pi.open("r1", "pi", "pi-v1", ())
            assert path == "/pi/s/r1/v1" and (pi.host, pi.port) == ("127.0.0.1", port)
            response = httpx.post(
                f"http://127.0.0.1:{port}{path}/chat/completions", json=chat_request(), timeout=60
            )
            other = httpx.get(f"{urls['hermes']}/rollouts/r1/atif", timeout=30)
            nodes = replica_nodes(urls)
            record = pi.close("r1")
        finally:
            serve.shutdown()
    assert response.status_code == 200 and record["turns"] and record["adapter"] == "pi-v1"
    assert other.status_code == 404  # the other shard holds no such rollout
    assert set(nodes) == {"pi", "hermes"}
    del hermes


@pytest.mark.slow
def test_an_autoscaled_shard_serves_one_rollout_from_several_replicas_through_its_ledger(ray_cluster):
    """A shard of two to three replicas (Serve autoscaling) over one ledger actor: a rollout's requests go
    to different replicas, and its record holds every turn, each checked, in order."""
    import ray
    from ray import serve

    from actors.rollout import GuardHTTP
    from jobs.stack import guard_app, ledger_name, replica_nodes
    from serve.app import REPLICA_HEADER
    from serve.settings import GuardSettings

    with ThreadServer(fake_upstream_app()) as upstream:
        port = free_port()
        try:
            url = guard_app(
                f"{upstream}/v1",
                GuardSettings(port=port, proxy="every_node", min_replicas=2, max_replicas=3),
                "pi",
            )
            _wait_healthy(url, timeout_s=120)
            guard = GuardHTTP(url)
            path = guard.open("r1", "pi", "pi-v1", ())
            served = []
            for n in range(12):
                response = httpx.post(
                    f"http://127.0.0.1:{port}{path}/chat/completions",
                    json=chat_request(n % 2 == 0),
                    timeout=60,
                )
                assert response.status_code == 200
                served.append(response.headers[REPLICA_HEADER])
            record = guard.close("r1")
            status = serve.status().applications["guard-pi"].deployments["guard"]
            nodes = replica_nodes({"pi": url})
        finally:
            serve.shutdown()
            ray.kill(ray.get_actor(ledger_name("pi")))
    assert len(set(served)) >= 2, served  # both replicas served this rollout
    assert status.replica_states.get("RUNNING", 0) >= 2 and len(nodes["pi"]) >= 2, nodes
    assert [t["index"] for t in record["turns"]] == list(range(12))
    assert len(record["blocks"]) == 12 and record["blocked"]  # every turn checked, whichever replica


@pytest.mark.slow
def test_a_stopped_guard_leaves_no_controller_and_no_failed_task_lines_and_starts_again(ray_cluster, capfd):
    """The jobs' end: Serve stops without the raylet's "ServeController.graceful_shutdown failed ...
    killed by ray.kill" lines (the driver asks the replica's node over HTTP, holding no handle), its
    controller is gone, and a guard deploys again on the same Ray session (the smoke run's next stage)."""
    import ray
    from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE

    from jobs.stack import guard_app, replica_nodes, stop_serve
    from serve.settings import GuardSettings

    settings = GuardSettings(port=free_port(), proxy="every_node")
    for _ in range(2):
        url = guard_app("http://127.0.0.1:9/v1", settings, "pi")
        _wait_healthy(url, timeout_s=120)
        assert replica_nodes({"pi": url})["pi"] == [ray.util.get_node_ip_address()]
        stop_serve()
        with pytest.raises(ValueError):
            ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
    time.sleep(3)  # the raylet's lines reach the driver's stderr through the log monitor
    out, err = capfd.readouterr()
    failed = [line for line in (out + err).splitlines() if "ServeController." in line and "failed" in line]
    assert failed == []
