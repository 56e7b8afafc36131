"""From the guard's token record of a rollout to training rows, with no re-tokenization.

Each turn the guard recorded holds the exact prompt ids the server saw, the completion ids it sampled
and their logprobs. A harness re-sends the whole conversation every turn, so when the next turn's prompt
starts with every token held so far (the template reproduced the earlier reply exactly), the turn is
appended to the same row: the new prompt tail as context (mask 0), the new completion as trained
tokens (mask 1, with its sampler logprobs). Otherwise the row is closed and a new one starts (a fork),
so every trained token is one the sampler produced, in the context it was produced in. This is TRL's
async rollout worker's CLEAN / FORK rule without its REALIGN case (which turns sampled tokens into
context); it is written here because importing TRL's worker would load vLLM into every rollout actor.
Only the rollout's main conversation is trained: side requests a harness makes (titles, summaries)
carry another conversation key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecordedTurn:
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    conversation: str = ""

    def __post_init__(self) -> None:
        if len(self.logprobs) != len(self.completion_ids):
            raise ValueError(
                f"turn has {len(self.completion_ids)} completion ids but {len(self.logprobs)} logprobs: "
                "the guard must ask the server for logprobs (it does unless the upstream drops them)"
            )


@dataclass(frozen=True, slots=True)
class TrainingRow:
    """One training sequence: tokens, which of them to train, and the sampler's logprob of each."""

    input_ids: tuple[int, ...]
    completion_mask: tuple[int, ...]
    old_logprobs: tuple[float, ...]

    @property
    def trained_tokens(self) -> int:
        return sum(self.completion_mask)


def turns_from_record(record: Mapping[str, object]) -> list[RecordedTurn]:
    """The main conversation's turns from a guard record's JSON (``RolloutRecord.to_json()``);
    turns that failed upstream or carry no completion are left out."""
    turns = record.get("turns")
    if not isinstance(turns, list):
        raise ValueError("guard record has no 'turns' list: pass RolloutRecord.to_json() output")
    keys = [t.get("conversation", "") for t in turns if isinstance(t, Mapping)]
    main = record.get("conversation_key") or (max(set(keys), key=keys.count) if keys else "")
    out = []
    for turn in turns:
        if not isinstance(turn, Mapping) or turn.get("error") or not turn.get("completion_ids"):
            continue
        if turn.get("conversation", "") != main:
            continue
        out.append(
            RecordedTurn(
                tuple(turn["prompt_ids"]),
                tuple(turn["completion_ids"]),
                tuple(float(x) for x in turn.get("logprobs") or ()),
                str(turn.get("conversation", "")),
            )
        )
    return out


def rollout_rows(turns: Iterable[RecordedTurn]) -> list[TrainingRow]:
    """Chain turns into rows: append while each prompt extends the held tokens exactly, else fork."""
    rows: list[TrainingRow] = []
    ids: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for turn in turns:
        prompt = list(turn.prompt_ids)
        if ids and prompt[: len(ids)] != ids:
            rows.append(TrainingRow(tuple(ids), tuple(mask), tuple(logprobs)))
            ids, mask, logprobs = [], [], []
        tail = prompt[len(ids) :]
        ids += tail + list(turn.completion_ids)
        mask += [0] * len(tail) + [1] * len(turn.completion_ids)
        logprobs += [0.0] * len(tail) + list(turn.logprobs)
    if ids:
        rows.append(TrainingRow(tuple(ids), tuple(mask), tuple(logprobs)))
    return [row for row in rows if row.trained_tokens]
