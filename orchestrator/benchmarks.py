"""Benchmark items vendored under `data/benchmarks/` (see PROVENANCE.md there).

`load(name)` returns the upstream records unchanged, plus an `id` where upstream has
none (`gsm8k/test/0`, `hotpotqa/dev/0`; otherwise `task_id`, `name` or `unique_id`), and for
BFCL the `category` and the `possible_answer` (the gold calls) joined on `id`.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "benchmarks"
BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")


@dataclass(frozen=True)
class _Spec:
    path: str
    id_field: str | None  # upstream's id, or None to number the records
    id_prefix: str = ""


_SPECS = {
    "gsm8k": _Spec("gsm8k/test.jsonl.gz", None, "gsm8k/test/"),
    "gsm8k_train": _Spec("gsm8k/train.jsonl.gz", None, "gsm8k/train/"),
    "humaneval": _Spec("humaneval/HumanEval.jsonl.gz", "task_id"),
    "mbpp": _Spec("mbpp/mbpp-py.jsonl.gz", "name"),
    "math500": _Spec("math500/test.jsonl.gz", "unique_id"),
    "hotpotqa": _Spec("hotpotqa/hotpot_dev_v1_simplified.json.gz", None, "hotpotqa/dev/"),
}


def names() -> list[str]:
    """Every name `load` accepts."""
    return sorted([*_SPECS, "bfcl", *(f"bfcl_{category}" for category in BFCL_CATEGORIES)])


def load(name: str) -> list[dict[str, Any]]:
    """The items of benchmark `name` (see `names()`); KeyError for an unknown name."""
    if name == "bfcl":
        return [item for category in BFCL_CATEGORIES for item in _load_bfcl(category)]
    if name.startswith("bfcl_") and name.removeprefix("bfcl_") in BFCL_CATEGORIES:
        return _load_bfcl(name.removeprefix("bfcl_"))
    if name not in _SPECS:
        raise KeyError(f"Unknown benchmark {name!r}. Known: {', '.join(names())}.")
    spec = _SPECS[name]
    items = _read(DATA_DIR / spec.path)
    for number, item in enumerate(items):
        item.setdefault("id", item[spec.id_field] if spec.id_field else f"{spec.id_prefix}{number}")
    return items


def _load_bfcl(category: str) -> list[dict[str, Any]]:
    questions = _read(DATA_DIR / "bfcl" / f"BFCL_v4_{category}.json.gz")
    answers = {
        row["id"]: row["ground_truth"] for row in _read(DATA_DIR / "bfcl" / f"possible_answer_{category}.json.gz")
    }
    return [{**item, "category": category, "possible_answer": answers[item["id"]]} for item in questions]


def _read(path: Path) -> list[dict[str, Any]]:
    """A gzipped JSON array, or JSON lines (BFCL's `.json` files are JSON lines too)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        text = handle.read()
    if text.lstrip().startswith("["):
        data: list[dict[str, Any]] = json.loads(text)
        return data
    return [json.loads(line) for line in text.splitlines() if line.strip()]
