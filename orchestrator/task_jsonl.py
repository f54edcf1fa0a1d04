"""A user's own checker-verified tasks as JSON Lines, one task a line:

    {"prompt": "What is 6*7?", "gold": "42", "checker": "gsm8k", "domain": "math"}

`prompt` (non-empty), `gold` (a string, or a number; a list or object is kept as its JSON, as
BFCL's gold calls are), `checker` (a name of `orchestrator.core.checking`) and `domain` (one of
`orchestrator.outcomes.DOMAINS`) are required; `benchmark` (a string) and `metadata` (an
object: `item_id`, a code task's `entry_point` and `tests`, a tool task's `tools`) are optional.
Any other key is an error, so that a misspelt one is not dropped in silence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from orchestrator.benchmark_tasks import TaskSpec
from orchestrator.core.checking import KINDS, benchmark_key, checker_names, has_checker
from orchestrator.outcomes import DOMAINS

REQUIRED = ("prompt", "gold", "checker", "domain")
OPTIONAL = ("benchmark", "metadata")
ERRORS_IN_MESSAGE = 20


class TaskFormatError(ValueError):
    """Some lines are not valid tasks; `errors` holds (line number, message) of each."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        self.errors = errors
        shown = "; ".join(f"line {line}: {message}" for line, message in errors[:ERRORS_IN_MESSAGE])
        if len(errors) > ERRORS_IN_MESSAGE:
            shown += f"; and {len(errors) - ERRORS_IN_MESSAGE} more"
        super().__init__(f"{len(errors)} invalid line{'' if len(errors) == 1 else 's'}: {shown}")


def read_tasks(lines: Iterable[str]) -> list[tuple[int, TaskSpec]]:
    """(line number, spec) of every non-blank line; TaskFormatError listing every bad line."""
    out: list[tuple[int, TaskSpec]] = []
    errors: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            spec = task_from_json(line)
        except ValueError as exc:
            errors.append((number, str(exc)))
            continue
        if spec.item_id and spec.item_id in seen:
            errors.append((number, f"metadata.item_id {spec.item_id!r} is on line {seen[spec.item_id]} too"))
            continue
        if spec.item_id:
            seen[spec.item_id] = number
        out.append((number, spec))
    if errors:
        raise TaskFormatError(errors)
    return out


def task_from_json(line: str) -> TaskSpec:
    """One line as a spec; ValueError naming every problem with it."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a task is a JSON object, not {type(data).__name__}")
    problems = [f'"{key}" is missing' for key in REQUIRED if key not in data]
    allowed = REQUIRED + OPTIONAL
    problems += [f'unknown key "{key}" (a task has {", ".join(allowed)})' for key in data if key not in allowed]
    prompt, checker, domain = data.get("prompt", ""), data.get("checker", ""), data.get("domain", "")
    benchmark, metadata = data.get("benchmark", ""), data.get("metadata", {})
    gold = _gold(data.get("gold", ""))
    if not isinstance(prompt, str) or ("prompt" in data and not prompt.strip()):
        problems.append('"prompt" must be a non-empty string')
    if gold is None:
        problems.append('"gold" must be a string, a number, a list or an object')
    elif "gold" in data and not gold.strip():
        problems.append('"gold" is empty: a checker needs a gold answer')
    if not isinstance(checker, str) or ("checker" in data and not has_checker(checker)):
        problems.append(f'"checker" {checker!r} is not one of {", ".join(checker_names())}')
    if not isinstance(domain, str) or ("domain" in data and domain not in DOMAINS):
        problems.append(f'"domain" {domain!r} is not one of {", ".join(DOMAINS)}')
    if not isinstance(benchmark, str):
        problems.append('"benchmark" must be a string')
    if not isinstance(metadata, dict):
        problems.append('"metadata" must be an object')
    if not problems:
        problems += _checker_needs(checker, str(gold), metadata)
    if problems:
        raise ValueError("; ".join(problems))
    item_id = metadata.get("item_id", "")
    return TaskSpec(
        text=prompt,
        gold=str(gold),
        checker=checker,
        benchmark=benchmark,
        domain=domain,
        item_id=str(item_id),
        metadata=metadata,
    )


def _gold(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    return None


def _checker_needs(checker: str, gold: str, metadata: dict[str, Any]) -> list[str]:
    """What a kind of checker cannot score without (it would fail, or pass, every answer)."""
    kind = KINDS[benchmark_key(checker)]
    problems = []
    item_id = metadata.get("item_id")
    if item_id is not None and (not isinstance(item_id, str) or not item_id.strip()):
        problems.append('"metadata.item_id" must be a non-empty string')
    if kind == "code":  # without it the tests' check(candidate) is never called, and anything passes
        entry_point = metadata.get("entry_point")
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            problems.append(f'a {checker} task needs "metadata.entry_point", the function the tests call')
    if kind == "number" and not any(char.isdigit() for char in gold):
        problems.append(f'"gold" {gold!r} has no number for the {checker} checker')
    if kind == "function_calls":
        try:
            calls = json.loads(gold)
        except ValueError:
            calls = None
        if not isinstance(calls, list | dict):
            problems.append('"gold" must be BFCL\'s gold calls, [{"function": {"argument": [allowed values]}}]')
    return problems
