"""Placement settings of the serving stack, checked at config load."""

from __future__ import annotations

import pytest

from actors.config_loader import ConfigError, load_config
from jobs.sections import ServingSection
from jobs.train import TrainJobConfig
from serve.settings import GuardSettings


def test_known_strategies_and_proxies_pass():
    assert ServingSection(placement="STRICT_SPREAD").placement == "STRICT_SPREAD"
    assert GuardSettings(proxy="head_only", min_replicas=2, max_replicas=4).replicas == (2, 4)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("serving.placement=spread_out", "serving: placement='spread_out': choose one of PACK, SPREAD"),
        ("guard.proxy=nowhere", "guard: proxy='nowhere': choose auto, every_node or head_only"),
        ("guard.min_replicas=3", r"guard: min_replicas=3, max_replicas=1: need 1 <= minimum <= maximum"),
    ],
)
def test_a_bad_placement_names_the_choices(tmp_path, override, message):
    path = tmp_path / "train.yaml"
    path.write_text("trainer: {max_steps: 1}\n")
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config(TrainJobConfig, path, (override,))


def test_the_proxy_is_on_every_node_alone_and_at_the_head_on_a_cluster():
    from jobs.stack import resolve_proxy

    assert resolve_proxy("auto", 1) == "every_node" and resolve_proxy("auto", 3) == "head_only"
    assert resolve_proxy("head_only", 1) == "head_only" and resolve_proxy("every_node", 1) == "every_node"
    with pytest.raises(
        ValueError, match="every_node on a cluster of 3 nodes.*set guard.proxy=auto or head_only"
    ):
        resolve_proxy("every_node", 3)


def test_a_model_folder_on_a_cluster_without_storage_is_refused_with_the_fix():
    from jobs.stack import model_problem

    problem = model_problem(3, "/cache/models/tiny-agent-rows-pi-0123", "")
    assert problem and "3 nodes" in problem and "set storage: s3://" in problem
    assert model_problem(1, "/cache/models/tiny", "") is None
    assert model_problem(3, "/cache/models/tiny", "s3://bucket/run") is None
    assert model_problem(3, "LiquidAI/LFM2.5-24B-A2B", "") is None  # each node fetches a Hub id itself


def test_on_a_cluster_the_model_folder_goes_to_storage_and_the_copy_is_named(tmp_path, capsys):
    """First cluster run: the tiny agent was built on the driver and named by that node's path, which the
    serving and trainer nodes did not have."""
    from actors.serving import ServingConfig
    from jobs.stack import model_for_nodes

    built = tmp_path / "driver-cache" / "tiny-agent-rows-pi-0123"
    built.mkdir(parents=True)
    (built / "config.json").write_text("{}")
    (built / "model.safetensors").write_bytes(b"weights")
    cfg = ServingConfig(model=str(built))
    assert model_for_nodes(cfg, 1, "", print) == cfg  # one machine: the folder as it is
    hub = ServingConfig(model="LiquidAI/LFM2.5-24B-A2B")
    assert model_for_nodes(hub, 3, "s3://bucket/run", print) == hub
    bucket = tmp_path / "bucket"
    said: list[str] = []
    moved = model_for_nodes(cfg, 3, f"file://{bucket}/run/", said.append)
    assert moved.model.startswith(f"file://{bucket}/run/models/tiny-agent-rows-pi-0123-")
    stored = bucket / "run" / moved.model.rsplit("/run/", 1)[1]
    assert (stored / "model.safetensors").read_bytes() == b"weights" and len(said) == 1
    assert model_for_nodes(cfg, 3, f"file://{bucket}/run/", said.append) == moved and len(said) == 1  # kept
    mounted = model_for_nodes(cfg, 3, str(tmp_path / "mounted"), said.append)
    assert mounted.model == str(tmp_path / "mounted" / "models" / stored.name)
    with pytest.raises(ValueError, match="set storage"):
        model_for_nodes(cfg, 3, "", print)


def test_a_jobs_rollouts_section_is_what_the_guard_applies_to_every_turn() -> None:
    from actors.rollout_settings import RolloutSettings
    from jobs.stack import Forwarding, forwarding

    rollouts = RolloutSettings(temperature=0.7, constrain_tool_calls=True, max_turns=16)
    assert forwarding(rollouts, "hermes") == Forwarding(0.7, "hermes", 16)
    assert forwarding(RolloutSettings(), "lfm2") == Forwarding(None, None, 0)  # nothing asked, any parser
    with pytest.raises(ValueError, match="'lfm2'"):
        forwarding(rollouts, "lfm2")
    with pytest.raises(ValueError, match="max_turns=-1"):
        RolloutSettings(max_turns=-1)
