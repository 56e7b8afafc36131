"""The tiny agent: the locally built tiny model, fine-tuned on demonstrations in each harness's own tool
vocabulary, so that the CPU smoke run exercises the whole loop with real tool calls.

A 5M-parameter model trained from random weights for minutes cannot learn to write the demonstrations'
pandas programs: trained on whole demonstrations it emitted ``<tool_call>`` openings with broken JSON
(0 of 60 held-out first turns valid). Its training family is therefore the demonstrations' first move,
an inspection call with a short command (``ls``, ``head -n 5 data.csv``, ``wc -l data.csv``), followed by
the tool's result and a short closing line that claims nothing it did not do: it learns the harness's call
format, and to end its session after a tool result, so smoke sessions are short. It does not learn to
solve tasks.

``build_tiny_agent()`` returns the cached folder (``<cache>/tiny-agent-<fingerprint>``) or builds it:
the tiny model (``environments.tiny_model``), the family above for ``per_harness`` train tasks of each
harness (``environments.demos``, chosen by a fixed stride over the task ids), then a full
fine-tune with the SFT stage (``actors.sft.train.run_sft``: assistant tokens only), saved with the template
SFT rendered with, so that it is served what it was taught. The fingerprint covers
the recipe, the base model's fingerprint, the demonstrations' bytes and the SFT code, so a change gives
a new folder. ``python -m actors.sft.tiny_agent [--agent NAME] [--force]`` builds it and prints its figures.

``tiny-agent-rows`` is the learning check's agent: the same build on the row-count family's whole
demonstrations (``environments.tasks.shipped.row_count``), which it can learn to solve.
``tiny-agent-rows-pi`` is the smoke run's: that family in pi alone, cheap enough for a 15-minute run.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import inspect
import json
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from environments.errors import cli_main
from environments.harnesses.registry import harness_names

if TYPE_CHECKING:
    from environments.traces import Conversation

CLOSING = "I have looked at the workspace; that is all I will do."
FAMILIES = {"first-move": "shipped", "row-count": "row-count"}
"""Demonstration family -> the task set it is built from."""
AGENT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
SFT_MODULES = ("config.py", "data.py", "served_form.py", "sweep.py", "train.py")
"""The SFT stage's modules beside this one, whose bytes the fingerprint covers."""


@dataclass(frozen=True, slots=True)
class TinyAgentRecipe:
    family: str = "first-move"
    """``first-move`` (the shipped tasks' first inspection call, then ``CLOSING``) or ``row-count`` (the
    learning-check family's whole demonstrations: 1-5 calls where one is enough)."""
    per_harness: int = 36
    """Demonstrations per harness (train split)."""
    max_first_call_chars: int = 40
    """Longest arguments string of the first call for a demonstration to join the family."""
    harnesses: tuple[str, ...] = field(default_factory=harness_names)
    """The harnesses whose demonstrations it learns (every registered one by default)."""
    extra_tasks: int = 0
    """``row-count`` only: this many more generated train tasks of the family (``row_count_demo_tasks``)
    to draw demonstrations from, beyond the 48 its RL trains on."""
    learning_rate: float = 2e-3
    max_steps: int = 120
    max_length: int = 6144
    eval_fraction: float = 0.1
    seed: int = 0

    def fingerprint(self, base_fingerprint: str) -> str:
        """The recipe, the base model, the demonstrations' bytes and the code that builds (``_build`` and
        the SFT modules): a change to any of them (and only to them: not a task's limits, an agent added
        beside it or a docstring here) gives a new folder."""
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode())
        digest.update(base_fingerprint.encode())
        digest.update(demonstrations_digest(self).encode())
        for step in (_build, _serve_the_trained_template):  # this module's build, not its docs or agents
            digest.update(inspect.getsource(step).encode())
        for name in SFT_MODULES:
            digest.update((Path(__file__).resolve().parent / name).read_bytes())
        return digest.hexdigest()[:16]


@functools.cache
def demonstrations_digest(recipe: TinyAgentRecipe) -> str:
    """sha256 of the demonstrations ``recipe`` trains on (built in a scratch folder, once per process)."""
    with tempfile.TemporaryDirectory() as scratch:
        path, _ = demonstrations(recipe, Path(scratch))
        return hashlib.sha256(path.read_bytes()).hexdigest()


AGENTS = {
    "tiny-agent": TinyAgentRecipe(),
    "tiny-agent-rows": TinyAgentRecipe(family="row-count", per_harness=48, max_steps=240),
    # The smoke run's: the row-count family in pi alone, whose demonstrations are a third as long as
    # opencode's or hermes' (their system prompts are ~5K and ~4K tokens, pi's ~1.4K): 144 of them, from
    # 96 more generated tasks (on the 48 alone, RL drove a 100-step agent to calls that break or stop
    # short), in about two minutes on 2 cores.
    # Seed 2, 80 steps: under seed 0 greedy decoding of the first call looped (`> answer.txt.txt.txt...`)
    # in 24 of 24 held-out sessions; seeds 1 and 2 wrote 24 valid first calls, seed 2 starting with a look.
    # At 160 steps that agent already passed every held-out task (1.00 -> 1.00 in the main job); at 80 it
    # passes 0.71 and the main job shows 0.71 -> 1.00.
    "tiny-agent-rows-pi": TinyAgentRecipe(
        family="row-count", per_harness=144, harnesses=("pi",), extra_tasks=96, max_steps=80, seed=2
    ),
}
"""Model names that resolve to a locally built tiny agent (``actors.models.resolve_model``)."""


def first_move(demo: Conversation, max_chars: int) -> Conversation | None:
    """The demonstration cut to its first tool call (if short), that call's result and ``CLOSING``."""
    messages = list(demo.messages)
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), None)
    if first is None or not messages[first].get("tool_calls") or messages[-1]["role"] != "assistant":
        return None
    call = messages[first]
    if len(call["tool_calls"]) != 1 or len(call["tool_calls"][0]["function"]["arguments"]) > max_chars:
        return None
    result = messages[first + 1]
    if result.get("role") != "tool":
        return None
    kept = [*messages[: first + 2], {"role": "assistant", "content": CLOSING}]
    return replace(demo, messages=tuple(kept), meta={**demo.meta, "tool_calls": 1, "family": "first-move"})


def demonstrations(recipe: TinyAgentRecipe, out: Path) -> tuple[Path, dict[str, int]]:
    """Write the chosen demonstrations to ``out/demos.jsonl``; returns it and the count per harness."""
    from environments.core.types import Split
    from environments.demos import build_demos, demo_record
    from environments.tasks.shipped import task_set

    if recipe.family not in FAMILIES:
        raise ValueError(f"family={recipe.family!r}: choose one of {', '.join(FAMILIES)}")
    tasks = task_set(FAMILIES[recipe.family])
    if recipe.extra_tasks:
        from environments.tasks.shipped.row_count import row_count_demo_tasks

        if recipe.family != "row-count":
            raise ValueError(f"extra_tasks={recipe.extra_tasks}: only the row-count family generates more")
        tasks = [*tasks, *row_count_demo_tasks(recipe.extra_tasks)]
    train = sorted((t for t in tasks if t.split is Split.TRAIN), key=lambda t: t.id)
    counts = {}
    path = out / "demos.jsonl"
    with path.open("w") as handle:
        for harness in recipe.harnesses:
            demos, _ = build_demos(train, harness)
            if recipe.family == "first-move":
                demos = [d for d in (first_move(d, recipe.max_first_call_chars) for d in demos) if d]
            stride = max(1, len(demos) // recipe.per_harness)
            chosen = demos[::stride][: recipe.per_harness]
            counts[harness] = len(chosen)
            for demo in chosen:
                handle.write(json.dumps(demo_record(demo)) + "\n")
    return path, counts


def build_tiny_agent(
    recipe: TinyAgentRecipe | None = None, out: Path | None = None, *, force: bool = False, log=print
) -> Path:
    """The tiny agent's folder, built only if the cached copy is missing or stale."""
    from environments.tiny_model import TinyModelRecipe, build_tiny_model, cache_root
    from environments.tiny_model.build import build_cached

    recipe = recipe or TinyAgentRecipe()
    base_recipe = TinyModelRecipe()
    target = out or cache_root() / f"tiny-agent-{recipe.fingerprint(base_recipe.fingerprint())}"

    def make(staging: Path) -> None:
        _build(recipe, build_tiny_model(base_recipe), staging, log)

    return build_cached(target, AGENT_FILES, make, force=force)


def _build(recipe: TinyAgentRecipe, base: Path, staging: Path, log) -> dict[str, Any]:
    from actors.sft.config import SFTConfig
    from actors.sft.train import run_sft

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        traces, counts = demonstrations(recipe, Path(scratch))
        log(f"[tiny agent] {sum(counts.values())} demonstrations ({counts}); full fine-tune of {base.name}")
        cfg = SFTConfig(
            model=str(base),
            traces=(str(traces),),
            out_dir=str(staging),
            full_finetune=True,
            learning_rate=recipe.learning_rate,
            max_steps=recipe.max_steps,
            max_length=recipe.max_length,
            eval_fraction=recipe.eval_fraction,
            seed=recipe.seed,
            logging_steps=10,
        )
        figures = run_sft(cfg, log=log)
    _serve_the_trained_template(staging)
    figures.update(demonstrations=counts, build_s=round(time.perf_counter() - started, 1))
    (staging / "tiny_agent.json").write_text(
        json.dumps({"recipe": asdict(recipe), "figures": figures}, indent=2, default=str) + "\n"
    )
    return figures


def _serve_the_trained_template(folder: Path) -> None:
    """Give the agent the template SFT rendered its examples with (TRL's training variant), as a converted
    GGUF checkpoint has (``actors.serving.gguf.served_template``). Served with Qwen3's own, which drops
    earlier turns' empty ``<think>`` blocks, the row-count agent made its first call, then wrote text
    instead of its second in every session: pass@1 0.00 at the start of the main job."""
    from transformers import AutoTokenizer

    from actors.serving.gguf import served_template

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.chat_template = served_template(tokenizer)
    tokenizer.save_pretrained(str(folder))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if a cached copy exists")
    parser.add_argument("--agent", choices=sorted(AGENTS), default="tiny-agent")
    args = parser.parse_args(argv)
    path = build_tiny_agent(AGENTS[args.agent], force=args.force)
    record = json.loads((path / "tiny_agent.json").read_text())
    print(json.dumps({"path": str(path), **record["figures"]}, default=str))


def first_turn_prompts(harness: str, split: str = "eval", limit: int = 30) -> list[dict[str, Any]]:
    """Chat requests for the first model turn of ``limit`` demonstrations of the tiny agent's family
    (``first_move``) for ``harness``: system prompt, instruction, the harness's declared tools; spread
    evenly over the split's tasks."""
    from environments.core.types import Split
    from environments.demos import build_demos, demo_record
    from environments.tasks.shipped import shipped_tasks
    from environments.traces import read_text

    tasks = sorted((t for t in shipped_tasks() if t.split is Split(split)), key=lambda t: t.id)
    demos, _ = build_demos(tasks, harness)
    demos = [d for d in demos if first_move(d, TinyAgentRecipe().max_first_call_chars) is not None]
    stride = max(1, len(demos) // limit)
    text = "\n".join(json.dumps(demo_record(d)) for d in demos[::stride][:limit])
    conversations, _ = read_text(text, source=f"{harness}-{split}", format="chat")
    requests = []
    for conv in conversations:
        first = next(i for i, m in enumerate(conv.messages) if m["role"] == "assistant")
        requests.append({"messages": list(conv.messages[:first]), "tools": list(conv.tools)})
    return requests


if __name__ == "__main__":
    cli_main(main)
