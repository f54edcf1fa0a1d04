"""LLMRouter: one record per (query, model), primitive direct, with scores but no responses.

`train.json` / `test.json` hold `{question, scores{model: 0..1}}`; the task name and
ground truth come from `default_query_<split>.jsonl`, joined on the question text.
Nothing records tokens or responses, so the response is None, the prompt tokens are
estimated from the question (4 characters a token), the completion is *assumed* to be
`assume_completion_tokens` long, and the cost follows from the `default_llm.json` prices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord, Split, cost_from_prices, estimate_tokens
from workers.importers.common import ImportLog, Prices, read_json, read_jsonl

SOURCE = "llmrouter"
DEFAULT_COMPLETION_TOKENS = 256
SPLITS: tuple[Split, ...] = ("train", "test")
DOMAINS = {
    "math": "math",
    "gsm8k": "math",
    "agentverse-mgsm": "math",
    "mmlu": "knowledge",
    "gpqa": "knowledge",
    "natural_qa": "knowledge",
    "trivia_qa": "knowledge",
    "arc_challenge": "reasoning",
    "commonsense_qa": "reasoning",
    "openbook_qa": "reasoning",
    "agentverse-logicgrid": "reasoning",
    "mbpp": "code",
    "human_eval": "code",
    "commongen": "chat",
}


@dataclass(frozen=True)
class Item:
    item_id: str
    split: Split
    question: str
    benchmark: str
    gold: str | None


def prices(src: Path) -> Prices:
    """`default_llm.json` as a price table ($ per million tokens)."""
    return {
        model: {
            "input_per_mtok": float(entry["input_price"]),
            "output_per_mtok": float(entry["output_price"]),
        }
        for model, entry in read_json(src / "default_llm.json").items()
    }


def records(
    src: Path, *, assume_completion_tokens: int = DEFAULT_COMPLETION_TOKENS, log: ImportLog | None = None
) -> Iterator[OutcomeRecord]:
    if assume_completion_tokens < 0:
        raise ValueError("assume_completion_tokens must be >= 0")
    log = log if log is not None else ImportLog()
    table = prices(src)
    seen: dict[str, Split] = {}
    for split in SPLITS:
        queries = _queries_by_text(src / f"default_query_{split}.jsonl")
        for index, entry in enumerate(read_json(src / f"{split}.json")):
            question = entry["question"]
            if seen.setdefault(question, split) != split:
                log.notes["question in both train and test (kept in each)"] += 1
            task = _task_for(queries.get(question, []), log)
            if task is None:
                log.skipped["question without a query row (records)"] += len(entry["scores"])
                continue
            item = Item(f"{split}.{index}", split, question, *task)
            yield from _item_records(item, entry["scores"], table, assume_completion_tokens, log)


def _queries_by_text(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_text: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in read_jsonl(path):
        by_text[row["query"]].append(row)
    return by_text


def _task_for(rows: list[dict[str, Any]], log: ImportLog) -> tuple[str, str | None] | None:
    """(task name, ground truth) for a question; the first query row wins when several match.

    When the matching rows disagree on the ground truth, gold is None: the scores cannot
    tell which row they were measured against.
    """
    if not rows:
        return None
    golds = {str(row["ground_truth"]) for row in rows}
    if len(rows) > 1:
        log.notes["question matching several query rows (first task kept)"] += 1
    if len(golds) > 1:
        log.notes["ambiguous ground truth (gold left null)"] += 1
        return rows[0]["task_name"], None
    return rows[0]["task_name"], golds.pop()


def _item_records(
    item: Item, scores: dict[str, float | None], table: Prices, completion_tokens: int, log: ImportLog
) -> Iterator[OutcomeRecord]:
    if item.benchmark not in DOMAINS:
        raise ValueError(f"{item.item_id}: no domain for task {item.benchmark!r}")
    prompt_tokens = estimate_tokens(item.question)
    for model, score in scores.items():
        if score is None:
            log.skipped["empty score"] += 1
            continue
        price = table.get(model)
        yield OutcomeRecord(
            source=SOURCE,
            item_id=item.item_id,
            split=item.split,
            benchmark=item.benchmark,
            domain=DOMAINS[item.benchmark],
            prompt=item.question,
            gold=item.gold,
            model=model,
            primitive="direct",
            response=None,
            score=float(score),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_from_prices(prompt_tokens, completion_tokens, price) if price else None,
            latency_s=None,
        )
