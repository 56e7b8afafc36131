"""What the tiny model is made of: a frozen recipe whose fingerprint names the cached build.

The recipe is pure data; ``build.py`` turns it into files. Any change to a field, to the corpus generator
(``CORPUS_VERSION``), to the chat template or to the library versions that write the files changes the
fingerprint, so a stale cache is never reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

from environments.harness_prompts import HARNESSES, harness_request
from environments.tiny_model.corpus import CORPUS_VERSION

# Chat-template special tokens. The `<|...|>` ones end or frame turns and are special (skipped when
# decoding); the XML-like ones must survive decoding so that vLLM's hermes tool parser and TRL's response
# parser can see them, exactly as in the Qwen family whose template we use.
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TEMPLATE_TOKENS: tuple[str, ...] = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"


def chat_template() -> str:
    """TRL's shipped Qwen3 template, byte for byte: TRL's async trainer only accepts templates it knows."""
    # find_spec locates TRL without importing it (importing TRL is slow and changes vLLM's log level).
    spec = find_spec("trl")
    if spec is None or spec.origin is None:
        raise RuntimeError("TRL is not installed: run scripts/setup.sh")
    return (Path(spec.origin).parent / "chat_templates" / "qwen3.jinja").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class TinyModelRecipe:
    """A Qwen2-family causal LM small enough to build, serve and train on a CPU in seconds."""

    seed: int = 0
    vocab_size: int = 8192
    """BPE target; the trainer stops earlier (about 7K) when no pair is frequent enough. The model's
    embedding has exactly as many rows as the tokenizer has tokens."""
    hidden_size: int = 256
    intermediate_size: int = 768
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 131072
    """Hermes refuses a model whose context is under 64K; a real session needs tens of thousands."""
    rope_theta: float = 1_000_000.0
    initializer_range: float = 0.05
    """Wider than the usual 0.02 so random logits are peaked and greedy decoding has clear winners."""
    corpus_documents: int = 8000

    def __post_init__(self) -> None:
        problems = []
        if self.vocab_size < 512:
            problems.append(f"vocab_size={self.vocab_size}: must be >= 512 (256 bytes + merges + specials)")
        if self.hidden_size % self.num_attention_heads:
            problems.append(f"hidden_size={self.hidden_size}: must divide by num_attention_heads")
        if self.num_attention_heads % self.num_key_value_heads:
            problems.append("num_attention_heads must be a multiple of num_key_value_heads")
        if self.max_position_embeddings < 65536:
            problems.append(f"max_position_embeddings={self.max_position_embeddings}: hermes needs >= 65536")
        if problems:
            raise ValueError("TinyModelRecipe: " + "; ".join(problems))

    def fingerprint(self) -> str:
        """A short hash of everything that decides the built files' bytes."""
        versions = {
            name: metadata.version(name) for name in ("tokenizers", "transformers", "torch", "safetensors")
        }
        prompts = {  # keys sorted, as the corpus reads them
            h: hashlib.sha256(json.dumps(harness_request(h), sort_keys=True).encode()).hexdigest()
            for h in HARNESSES
        }
        payload = json.dumps(
            {
                "recipe": asdict(self),
                "corpus": CORPUS_VERSION,
                "prompts": prompts,
                "template": chat_template(),
                "versions": versions,
                "special": SPECIAL_TOKENS,
                "template_tokens": TEMPLATE_TOKENS,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]
