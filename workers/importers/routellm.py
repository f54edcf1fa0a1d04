"""RouteLLM: GSM8K responses of two models, and MT-Bench turns judged by GPT-4.

- `gsm8k_responses.csv`: one row per GSM8K test question (in test-set order), with
  `<model>` (True/False) and `<model>_response`. Primitive direct, domain math. The
  gold answer is joined from GSM8K's `test.jsonl` when one is given.
- `gpt-4_single.jsonl`: GPT-4 judge ratings (1-10) of the `martian` and `unify` routers
  per MT-Bench question and turn; score = rating / 10, domain chat. The question and the
  answer are cut from the judge prompt that quotes them. A turn-2 prompt is the recorded
  conversation up to the second question, in the judge's `### User:` transcript form.
  A rating of -1 (the judge gave none) is skipped.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord
from workers.importers.common import ImportLog, Prices, estimated_usage, read_jsonl

SOURCE = "routellm"
RESPONSE_SUFFIX = "_response"
TRUTH = {"True": 1.0, "False": 0.0}

QUESTION = ("[Question]\n", "\n\n[The Start of ")
ANSWER = ("[The Start of Assistant's Answer]\n", "\n[The End of Assistant's Answer]")
REFERENCE = ("[The Start of Reference Answer]\n", "\n[The End of Reference Answer]")
CONVERSATION = (
    "<|The Start of Assistant A's Conversation with User|>\n\n",
    "\n\n<|The End of Assistant A's Conversation with User|>",
)
REFERENCE_CONVERSATION = ("<|The Start of Reference Answer|>\n\n", "\n\n<|The End of Reference Answer|>")
TURN_SPLIT = re.compile(r"\n\n### (?:User|Assistant A|Reference answer):\n")


def records(
    src: Path, *, prices: Prices | None = None, gsm8k_test: Path | None = None, log: ImportLog | None = None
) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    gold = gsm8k_gold(gsm8k_test) if gsm8k_test else {}
    yield from gsm8k_records(src / "gsm8k_responses.csv", gold, prices or {}, log)
    yield from mt_bench_records(src / "gpt-4_single.jsonl", log)


def gsm8k_gold(path: Path) -> dict[str, str]:
    """question -> the final answer after `####` in GSM8K's jsonl."""
    return {row["question"]: row["answer"].rsplit("####", 1)[-1].strip() for row in read_jsonl(path)}


def gsm8k_records(path: Path, gold: dict[str, str], prices: Prices, log: ImportLog) -> Iterator[OutcomeRecord]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        models = [name for name in fields if f"{name}{RESPONSE_SUFFIX}" in fields]
        for index, row in enumerate(reader):
            prompt = row["prompt"]
            if gold and prompt not in gold:
                log.notes["gsm8k question not in the gold file"] += 1
            for model in models:
                score = TRUTH.get(row[model].strip())
                if score is None:
                    log.skipped["gsm8k correctness cell not True/False"] += 1
                    continue
                response = row[f"{model}{RESPONSE_SUFFIX}"] or None
                usage = estimated_usage(model, prompt, response, prices)
                yield OutcomeRecord(
                    source=SOURCE,
                    item_id=f"gsm8k.test.{index}",
                    split=None,
                    benchmark="gsm8k",
                    domain="math",
                    prompt=prompt,
                    gold=gold.get(prompt),
                    model=model,
                    primitive="direct",
                    response=response,
                    score=score,
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    cost_usd=usage.cost_usd,
                    latency_s=None,
                )


def mt_bench_records(path: Path, log: ImportLog) -> Iterator[OutcomeRecord]:
    for row in read_jsonl(path):
        rating = row["score"]
        if not 1 <= rating <= 10:
            log.skipped[f"MT-Bench rating {rating} (judge gave none)"] += 1
            continue
        prompt, response, gold = _turn(row)
        yield OutcomeRecord(
            source=SOURCE,
            item_id=f"mt-bench.{row['question_id']}.turn{row['turn']}",
            split=None,
            benchmark="mt-bench",
            domain="chat",
            prompt=prompt,
            gold=gold,
            model=row["model"],
            primitive="direct",
            response=response,
            score=rating / 10,
            prompt_tokens=None,
            completion_tokens=None,
            cost_usd=None,
            latency_s=None,
        )


def _turn(row: dict[str, Any]) -> tuple[str, str, str | None]:
    """(prompt, response, reference answer or None) quoted in one judge prompt."""
    text = row["user_prompt"]
    if row["turn"] == 1:
        gold = _between(text, *REFERENCE) if REFERENCE[0] in text else None
        return _between(text, *QUESTION), _between(text, *ANSWER), gold
    question_1, answer_1, question_2, answer_2 = _turns(_between(text, *CONVERSATION))
    gold = None
    if REFERENCE_CONVERSATION[0] in text:
        gold = _turns(_between(text, *REFERENCE_CONVERSATION))[3]
    prompt = f"### User:\n{question_1}\n\n### Assistant A:\n{answer_1}\n\n### User:\n{question_2}"
    return prompt, answer_2, gold


def _turns(conversation: str) -> list[str]:
    parts = TURN_SPLIT.split("\n\n" + conversation)
    if len(parts) != 5 or parts[0]:
        raise ValueError(f"expected a two-turn conversation, got {len(parts) - 1} parts")
    return parts[1:]


def _between(text: str, start: str, end: str) -> str:
    begin = text.index(start) + len(start)
    return text[begin : text.index(end, begin)]
