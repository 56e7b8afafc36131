"""Build the tiny model's files (tokenizer, chat template, config, weights) deterministically, with a cache.

Same recipe -> byte-identical files: the corpus is seeded, BPE training runs single-threaded, weights come
from a seeded CPU generator and safetensors writes tensors in name order. The build happens in a temporary
folder beside the cache entry and is renamed into place, so a reader never sees a half-written model; a
file lock stops two processes from building the same entry at once.

    python -m environments.tiny_model [--out DIR] [--force]
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from environments.tiny_model.corpus import corpus_documents
from environments.tiny_model.recipe import (
    EOS_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    TEMPLATE_TOKENS,
    TinyModelRecipe,
    chat_template,
)

CHECKPOINT_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
)
"""What a served and trained checkpoint folder holds (``build_cached`` checks for them)."""
MODEL_FILES = (*CHECKPOINT_FILES, "recipe.json")


def cache_root() -> Path:
    """Where built models live: ``$HARNESS_ADAPTERS_CACHE`` or ``~/.cache/harness-adapters``."""
    root = os.environ.get("HARNESS_ADAPTERS_CACHE") or Path.home() / ".cache" / "harness-adapters"
    return Path(root) / "models"


def _train_tokenizer(recipe: TinyModelRecipe):
    # Rayon threads can reorder merges that tie on frequency; one thread keeps the vocabulary stable.
    os.environ["RAYON_NUM_THREADS"] = "1"
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=recipe.vocab_size - len(TEMPLATE_TOKENS),
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus_documents(recipe.seed, recipe.corpus_documents), trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in TEMPLATE_TOKENS])
    return tokenizer


def _write_tokenizer(recipe: TinyModelRecipe, out: Path) -> int:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=_train_tokenizer(recipe),
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=recipe.max_position_embeddings,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = chat_template()
    fast.save_pretrained(out)
    return len(fast)


def _write_model(recipe: TinyModelRecipe, out: Path, vocab_len: int) -> None:
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    tokenizer = json.loads((out / "tokenizer.json").read_text())
    ids = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    config = Qwen2Config(
        # Exactly the tokenizer's size: spare embedding rows would be sampled and decode to nothing.
        vocab_size=vocab_len,
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.num_hidden_layers,
        num_attention_heads=recipe.num_attention_heads,
        num_key_value_heads=recipe.num_key_value_heads,
        max_position_embeddings=recipe.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": recipe.rope_theta},
        initializer_range=recipe.initializer_range,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids[PAD_TOKEN],
        use_sliding_window=False,
        dtype="float32",
    )
    torch.manual_seed(recipe.seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        eos_token_id=[ids[EOS_TOKEN], ids[PAD_TOKEN]],
        pad_token_id=ids[PAD_TOKEN],
        do_sample=False,
    )
    model.save_pretrained(out, safe_serialization=True)


def build_cached(
    target: Path, files: tuple[str, ...], make: Callable[[Path], None], *, force: bool = False
) -> Path:
    """Return ``target`` if it holds ``files``; else build it once: ``make(staging)`` writes into a fresh
    folder beside it, renamed into place when done, under a lock so parallel callers build it once."""
    if not force and all((target / name).exists() for name in files):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and all((target / name).exists() for name in files):
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            make(staging)
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def build_tiny_model(
    recipe: TinyModelRecipe | None = None, out: Path | None = None, *, force: bool = False
) -> Path:
    """Return a folder holding the built model, building it only if the cached copy is missing or stale."""
    recipe = recipe or TinyModelRecipe()

    def make(staging: Path) -> None:
        vocab_len = _write_tokenizer(recipe, staging)
        _write_model(recipe, staging, vocab_len)
        record = {"recipe": asdict(recipe), "fingerprint": recipe.fingerprint()}
        (staging / "recipe.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")

    return build_cached(out or cache_root() / f"tiny-{recipe.fingerprint()}", MODEL_FILES, make, force=force)
