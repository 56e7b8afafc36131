"""Model cards: hub front matter, the training table, the evaluation section filled in place, and a push
that fails with the reason where no hub is reachable (tests run offline: nothing leaves the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from actors.model_card import NOT_EVALUATED, PushError, push, set_evaluation, write_card


def test_the_card_has_hub_front_matter_and_the_training_config(tmp_path: Path):
    (tmp_path / "checkpoint-2").mkdir()
    card = write_card(tmp_path / "checkpoint-2", "LiquidAI/LFM3-1.7B", "pi", {"lora_rank": 32, "step": 2})
    text = card.read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert front["base_model"] == "LiquidAI/LFM3-1.7B" and front["library_name"] == "peft"
    assert "pi" in front["tags"] and "lora" in front["tags"]
    assert "| lora_rank | 32 |" in text and "python -m jobs.use --harness pi" in text
    assert NOT_EVALUATED in text


def test_a_locally_built_base_is_named_by_its_folder_never_its_cache_path(tmp_path: Path):
    base = tmp_path / "cache" / "models" / "tiny-agent-6f9fd714"
    base.mkdir(parents=True)
    (tmp_path / "checkpoint-4").mkdir()
    text = write_card(tmp_path / "checkpoint-4", str(base), "pi", {"step": 4}).read_text()
    assert yaml.safe_load(text.split("---")[1])["base_model"] == "tiny-agent-6f9fd714"
    assert str(tmp_path) not in text


def test_the_evaluation_section_is_replaced_not_appended(tmp_path: Path):
    write_card(tmp_path, "base", "hermes", {"step": 1})
    assert set_evaluation(tmp_path, "| pass@1 | 0.25 |")
    assert set_evaluation(tmp_path, "| pass@1 | 0.50 |")
    text = (tmp_path / "README.md").read_text()
    assert "0.50" in text and "0.25" not in text and NOT_EVALUATED not in text
    assert text.count("## Evaluation") == 1 and "## Training" in text
    assert not set_evaluation(tmp_path / "nowhere", "x")


def test_push_without_a_reachable_hub_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, at import: an earlier test (SFT's tokenizers) may have done it
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(PushError, match="no README.md"):
        push(tmp_path, "someone/adapter")
    write_card(tmp_path, "base", "pi", {})
    with pytest.raises(RuntimeError, match="offline mode is on"):
        push(tmp_path, "someone/adapter")


def test_push_without_a_network_is_a_push_error_that_says_what_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hub_errors

    def unreachable(self, *args, **kwargs):
        raise hub_errors.HTTPError("[Errno -2] Name or service not known")  # the hub client's, not OSError

    monkeypatch.setattr(HfApi, "create_repo", unreachable)
    write_card(tmp_path, "base", "pi", {})
    with pytest.raises(PushError, match=r"not reachable \(\[Errno -2\] Name or service .*check the network"):
        push(tmp_path, "someone/adapter")
