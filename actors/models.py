"""Model presets (``actors/model_presets/*.yaml``, one ServingConfig each) and resolving ``tiny``.

A library the jobs and the validity measure (``serve.validity``) share; the preset files are this module's
data, beside it, and the job configs name them (``serving.preset``; the SFT config's ``model``). It builds
on ``actors.sft`` (a tiny agent's name resolves to the agent SFT builds), so nothing in ``actors.sft``
imports it: the SFT job resolves its model here before it trains.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from actors.config_loader import ConfigError, load_config
from actors.serving import ServingConfig
from actors.serving.parsers import tool_parser_problem
from actors.sft.tiny_agent import AGENTS, build_tiny_agent

PRESETS_DIR = Path(__file__).resolve().parent / "model_presets"
TINY = "tiny"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_preset(name: str, overrides: tuple[str, ...] = ()) -> ServingConfig:
    """The serving config of a named preset with ``overrides``; nothing is downloaded or built here. An
    unknown name, a bad override or a tool-call parser the installed vLLM lacks is a ConfigError now,
    not when the server starts."""
    path = PRESETS_DIR / f"{name}.yaml"
    if not path.exists():
        raise ConfigError(f"unknown model preset {name!r}: choose one of {', '.join(preset_names())}")
    try:
        cfg = load_config(ServingConfig, path, overrides)
    except ConfigError as exc:
        raise ConfigError(f"model preset {name!r}: {exc}") from None
    if problem := tool_parser_problem(cfg.tool_call_parser, cfg.extra_args):
        raise ConfigError(f"model preset {name!r}: {problem}")
    return cfg


def resolve_model(cfg: ServingConfig) -> ServingConfig:
    """Replace ``model: tiny`` / a tiny agent's name (``actors.sft.tiny_agent.AGENTS``) / a GGUF model
    (``actors.serving.gguf``: a name in ``GGUF_MODELS`` or a ``.gguf`` path) by the locally built or
    converted folder (building it if needed)."""
    if cfg.model == TINY:
        from environments.tiny_model import build_tiny_model

        return pin_model(replace(cfg, model=str(build_tiny_model())))
    from actors.serving.gguf import gguf_checkpoint
    from environments.tiny_model.build import cache_root

    if (converted := gguf_checkpoint(cfg.model, cache_root())) is not None:
        return pin_model(replace(cfg, model=str(converted)))
    if cfg.model in AGENTS:
        return pin_model(replace(cfg, model=str(build_tiny_agent(AGENTS[cfg.model]))))
    return pin_model(cfg)


def pin_model(cfg: ServingConfig) -> ServingConfig:
    """A Hub id fetched once here (progress bars), its revision replaced by the commit fetched, and its
    chat template checked against the tool-call parser; a folder is checked in place. The returned
    config still names the Hub id: each node loads the pinned commit from its own cache."""
    from actors.serving.weights import check_model_files, fetch_weights, pinned, source_of

    source = source_of(cfg)
    fetched = fetch_weights(source)
    check_model_files(fetched.path, cfg.tool_call_parser, cfg.max_model_len)
    return replace(cfg, revision=pinned(source, fetched).revision)


def resolve_model_path(model: str) -> str:
    """A preset name (``tiny`` builds the local model), else the folder or hub id as given; anything else
    is a ConfigError before a model is built or loaded."""
    from actors.serving.weights import is_hub_id

    if (PRESETS_DIR / f"{model}.yaml").exists():
        return resolve_model(load_preset(model)).model
    if not Path(model).exists() and not is_hub_id(model):
        raise ConfigError(
            f"model={model!r}: not a model preset, a folder or a Hub id (org/name); choose a preset "
            f"({', '.join(preset_names())}) or give a model folder"
        )
    return model
