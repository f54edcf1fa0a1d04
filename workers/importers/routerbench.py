"""RouterBench (RouterDC's `routerbench_zs` split): one record per (sample, model), primitive direct.

Each CSV row is one prompt; for every model there are three cells: `<model>` (0/1
correct), `<model>|model_response` and `<model>|total_cost` (USD, used as recorded).
Prompts and responses are stored as Python list literals (`"['...']"`) and are decoded
to the text inside. The split comes from the file name (`*_train.csv`, `*_test.csv`).
An empty score cell is counted in the log and skipped, never filled in.
"""

from __future__ import annotations

import ast
import csv
from collections.abc import Iterator
from pathlib import Path

from orchestrator.outcomes import OutcomeRecord, Split
from workers.importers.common import ImportLog

SOURCE = "routerbench"
DOMAINS = {"arc-challenge": "reasoning", "winogrande": "reasoning", "mbpp": "code"}
RESPONSE_SUFFIX = "|model_response"
COST_SUFFIX = "|total_cost"
# Prompts with few-shot examples exceed csv's default 128 KiB field limit.
CSV_FIELD_LIMIT = 2**31 - 1


def records(src: Path, *, log: ImportLog | None = None) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    csv.field_size_limit(CSV_FIELD_LIMIT)
    for path in sorted(src.glob("*.csv")):
        yield from _file_records(path, _split_of(path), log)


def _split_of(path: Path) -> Split:
    if path.stem.endswith("_train"):
        return "train"
    if path.stem.endswith("_test"):
        return "test"
    raise ValueError(f"{path.name}: expected a name ending in _train.csv or _test.csv")


def _file_records(path: Path, split: Split, log: ImportLog) -> Iterator[OutcomeRecord]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        models = [name for name in fields if f"{name}{RESPONSE_SUFFIX}" in fields]
        for row in reader:
            yield from _row_records(row, models, split, log)


def _row_records(row: dict[str, str], models: list[str], split: Split, log: ImportLog) -> Iterator[OutcomeRecord]:
    sample_id, benchmark = row["sample_id"], row["eval_name"]
    if benchmark not in DOMAINS:
        raise ValueError(f"{sample_id}: no domain for eval_name {benchmark!r}")
    prompt = decode_text(row["prompt"], what=f"{sample_id} prompt", log=log)
    for model in models:
        score_cell = row[model].strip()
        if not score_cell:
            log.skipped["empty score cell"] += 1
            continue
        cost_cell = row[f"{model}{COST_SUFFIX}"].strip()
        response_cell = row[f"{model}{RESPONSE_SUFFIX}"]
        yield OutcomeRecord(
            source=SOURCE,
            item_id=sample_id,
            split=split,
            benchmark=benchmark,
            domain=DOMAINS[benchmark],
            prompt=prompt,
            gold=None,
            model=model,
            primitive="direct",
            response=decode_text(response_cell, what=f"{sample_id} {model}", log=log) if response_cell else None,
            score=float(score_cell),
            prompt_tokens=None,
            completion_tokens=None,
            cost_usd=float(cost_cell) if cost_cell else None,
            latency_s=None,
        )


def decode_text(cell: str, *, what: str, log: ImportLog) -> str:
    """The text inside a `"['...']"` cell.

    A list that repeats one text (14 upstream ARC rows store their prompt twice) gives
    that text once; any other shape is an error rather than a guess.
    """
    value = ast.literal_eval(cell)
    if not isinstance(value, list) or not value or not all(isinstance(part, str) for part in value):
        raise ValueError(f"{what}: expected a list of strings, got {cell[:80]!r}")
    if len(set(value)) != 1:
        raise ValueError(f"{what}: a list of {len(value)} different texts")
    if len(value) > 1:
        log.notes["repeated text collapsed to one"] += 1
    return str(value[0])
