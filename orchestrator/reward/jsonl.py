"""Preference pairs as JSON Lines, in the TRL / Hugging Face preference format.

One pair a line:

    {"prompt": "What is 6*7?", "chosen": "42", "rejected": "48", "source": "human",
     "chosen_plan": {...}, "rejected_plan": {...}, "pair_id": 12, "task_id": 7, ...}

`prompt`, `chosen`, `rejected` (strings) and `source` (a non-empty string) are required;
`chosen_plan` / `rejected_plan` are optional plans (orchestrator.reward.plans) or null.
Every other key is kept in `PreferenceRecord.extra` and written back as it was.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from orchestrator.reward.plans import Plan, PlanError, plan_from_dict

TEXT_FIELDS = ("prompt", "chosen", "rejected", "source")
PLAN_FIELDS = ("chosen_plan", "rejected_plan")
RESERVED = frozenset(TEXT_FIELDS + PLAN_FIELDS)
ERRORS_IN_MESSAGE = 20


class PreferenceFormatError(ValueError):
    """Some lines are not valid preference records; `errors` holds (line number, message) of each
    (line 0: the file as a whole)."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        self.errors = errors
        shown = "; ".join(
            f"line {line}: {message}" if line else message for line, message in errors[:ERRORS_IN_MESSAGE]
        )
        if len(errors) > ERRORS_IN_MESSAGE:
            shown += f"; and {len(errors) - ERRORS_IN_MESSAGE} more"
        super().__init__(f"{len(errors)} invalid line{'' if len(errors) == 1 else 's'}: {shown}")


@dataclass
class PreferenceRecord:
    prompt: str
    chosen: str
    rejected: str
    source: str
    chosen_plan: Plan | None = None
    rejected_plan: Plan | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def record_to_json(record: PreferenceRecord) -> str:
    """One line (without the newline); plans are omitted when absent, `extra` follows the fixed keys."""
    data: dict[str, Any] = {
        "prompt": record.prompt,
        "chosen": record.chosen,
        "rejected": record.rejected,
        "source": record.source,
    }
    if record.chosen_plan is not None:
        data["chosen_plan"] = record.chosen_plan.to_dict()
    if record.rejected_plan is not None:
        data["rejected_plan"] = record.rejected_plan.to_dict()
    data.update((key, value) for key, value in record.extra.items() if key not in RESERVED)
    return json.dumps(data, ensure_ascii=False)


def write_preferences(target: str | os.PathLike[str] | IO[str], records: Iterable[PreferenceRecord]) -> int:
    """Write one line per record to a path (gzip when it ends in .gz) or an open text handle; the count."""
    if isinstance(target, str | os.PathLike):
        path = Path(target)
        with gzip.open(path, "wt", encoding="utf-8") if path.suffix == ".gz" else path.open("w", encoding="utf-8") as f:
            return write_preferences(f, records)
    count = 0
    for record in records:
        target.write(record_to_json(record) + "\n")
        count += 1
    return count


def read_preferences(source: Iterable[str] | str | os.PathLike[str]) -> list[PreferenceRecord]:
    """Parse every line (a path, gzip when it ends in .gz, or an iterable of lines); blank lines are skipped.

    Raises PreferenceFormatError listing every bad line, so nothing is read half-way.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as f:
                return read_preferences(f)
        except (OSError, EOFError, UnicodeDecodeError) as exc:  # not gzip, cut short, not UTF-8
            raise PreferenceFormatError([(0, f"the file cannot be read as UTF-8 JSON Lines: {exc}")]) from None
    records: list[PreferenceRecord] = []
    errors: list[tuple[int, str]] = []
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            records.append(parse_record(line))
        except ValueError as exc:
            errors.append((number, str(exc)))
    if errors:
        raise PreferenceFormatError(errors)
    return records


def parse_record(line: str) -> PreferenceRecord:
    """One line as a record; ValueError names every problem on it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
    if not isinstance(data, dict):
        raise ValueError(f"a record must be a JSON object, not {type(data).__name__}")
    problems: list[str] = []
    for name in TEXT_FIELDS:
        if name not in data:
            problems.append(f'"{name}" is missing')
        elif not isinstance(data[name], str):
            problems.append(f'"{name}" must be a string')
    for name in ("prompt", "source"):
        if isinstance(data.get(name), str) and not data[name].strip():
            problems.append(f'"{name}" is empty')
    plans: dict[str, Plan | None] = {}
    for name in PLAN_FIELDS:
        raw = data.get(name)
        try:
            plans[name] = None if raw is None else plan_from_dict(raw)
        except PlanError as exc:
            problems.append(f'"{name}" is not a valid plan: {exc}')
    if problems:
        raise ValueError("; ".join(problems))
    return PreferenceRecord(
        prompt=data["prompt"],
        chosen=data["chosen"],
        rejected=data["rejected"],
        source=data["source"],
        chosen_plan=plans["chosen_plan"],
        rejected_plan=plans["rejected_plan"],
        extra={key: value for key, value in data.items() if key not in RESERVED},
    )
