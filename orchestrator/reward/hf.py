"""Preference pairs in the Hugging Face `datasets` format: a directory `Dataset.save_to_disk`
writes, which TRL's reward and DPO trainers read (`load_from_disk`).

Columns: `prompt`, `chosen`, `rejected` (strings, what TRL reads), `source`, and
`chosen_plan`, `rejected_plan`, `extra` as JSON strings (null where absent), so that a
round trip through the directory gives back the same records as the JSONL format.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orchestrator.reward.jsonl import PreferenceFormatError, PreferenceRecord, parse_record, record_to_json

COLUMNS = ("prompt", "chosen", "rejected", "source", "chosen_plan", "rejected_plan", "extra")


def _row(record: PreferenceRecord) -> dict[str, Any]:
    data = json.loads(record_to_json(record))
    plans = {name: json.dumps(data.pop(name)) if name in data else None for name in ("chosen_plan", "rejected_plan")}
    fixed = {name: data.pop(name) for name in ("prompt", "chosen", "rejected", "source")}
    return fixed | plans | {"extra": json.dumps(data, ensure_ascii=False)}


def write_dataset(directory: str | os.PathLike[str], records: Iterable[PreferenceRecord]) -> int:
    """Save the records as a dataset directory (replacing one there); the count."""
    from datasets import Dataset, Features, Value

    rows = [_row(record) for record in records]
    features = Features({name: Value("string") for name in COLUMNS})
    Dataset.from_list(rows, features=features).save_to_disk(str(directory))
    return len(rows)


def read_dataset(directory: str | os.PathLike[str]) -> list[PreferenceRecord]:
    """The records of a dataset directory; PreferenceFormatError naming each bad row (row 1 is
    the first) or a directory that is not a saved dataset with `prompt`, `chosen` and `rejected`."""
    from datasets import load_from_disk

    path = Path(directory)
    try:
        dataset = load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise PreferenceFormatError([(0, f"{path} is not a saved dataset directory: {exc}")]) from None
    if hasattr(dataset, "keys"):  # a DatasetDict: its one split, or refuse
        splits = list(dataset.keys())
        if len(splits) != 1:
            raise PreferenceFormatError([(0, f"{path} holds the splits {', '.join(splits)}; export one of them")])
        dataset = dataset[splits[0]]
    missing = [name for name in ("prompt", "chosen", "rejected") if name not in dataset.column_names]
    if missing:
        raise PreferenceFormatError([(0, f"{path} lacks the column(s) {', '.join(missing)}")])
    records, errors = [], []
    for number, row in enumerate(dataset, start=1):
        data = {k: row[k] for k in ("prompt", "chosen", "rejected")} | {"source": row.get("source") or "imported"}
        try:
            for name in ("chosen_plan", "rejected_plan"):
                if row.get(name):
                    data[name] = json.loads(row[name])
            extra = json.loads(row["extra"]) if row.get("extra") else {}
            records.append(parse_record(json.dumps({**extra, **data})))
        except (ValueError, TypeError) as exc:
            errors.append((number, str(exc)))
    if errors:
        raise PreferenceFormatError(errors)
    return records
