from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from orchestrator.benchmark_tasks import BENCHMARKS, TaskSpec, benchmark_tasks
from orchestrator.composite import composite_text
from orchestrator.core.checking import checker_names, has_checker
from orchestrator.task_jsonl import TaskFormatError, read_tasks
from studio.errors import ApplicationError, Invalid
from studio.models import Domain, Task, User
from studio.storable import UnstorableText, check_storable


def check_task_text(text: str) -> None:
    limit = settings.ORCHESTRA_MAX_TASK_CHARS
    if not text.strip():
        raise Invalid("text", "The task text is empty.")
    if len(text) > limit:
        raise Invalid("text", f"The task text has {len(text):,} characters; the limit is {limit:,}.")


@transaction.atomic
def task_create(
    *,
    owner: User,
    text: str,
    gold_answer: str = "",
    checker: str = "",
    benchmark: str = "",
    domain: str = "",
    decomposable: bool = False,
    metadata: dict[str, Any] | None = None,
) -> Task:
    check_task_text(text)
    if domain and domain not in Domain.values:
        raise Invalid("domain", f"Unknown domain {domain!r}; use one of {', '.join(Domain.values)}.")
    if checker and not has_checker(checker):
        raise Invalid("checker", f"Unknown checker {checker!r}; use one of {', '.join(checker_names())}.")
    return Task.objects.create(
        owner=owner,
        text=text,
        gold_answer=gold_answer,
        checker=checker,
        benchmark=benchmark,
        domain=domain,
        decomposable=decomposable,
        metadata=metadata or {},
    )


@transaction.atomic
def task_create_composite(*, owner: User, items: list[tuple[str, str]], text: str = "") -> Task:
    """A task made of several recorded items (source, item_id). The default policy splits it
    into one subtask per item, which replay answers from the records; the run's score is the
    mean of the items' recorded scores, and it is correct when every item is."""
    from studio.models import RecordedOutcome

    if not 1 <= len(items) <= 32:
        raise Invalid("items", f"A composite task has 1 to 32 items, not {len(items)}.")
    parts: list[dict[str, Any]] = []
    for source, item_id in items:
        rows = list(
            RecordedOutcome.objects.filter(source=source, item_id=item_id)
            .values("prompt", "benchmark", "domain", "gold", "model", "primitive")
            .order_by("model", "primitive")
        )
        if not rows:
            raise Invalid("items", f"There is no recorded item {item_id!r} in source {source!r}.")
        first = rows[0]
        parts.append(
            {
                "source": source,
                "item_id": item_id,
                "prompt": first["prompt"],
                "benchmark": first["benchmark"],
                "domain": first["domain"],
                "gold": first["gold"],
                "recorded_pairs": sorted({(r["model"], r["primitive"]) for r in rows}),
            }
        )
    domains = {part["domain"] for part in parts}
    body = text or composite_text([p["prompt"] for p in parts])
    check_task_text(body[: settings.ORCHESTRA_MAX_TASK_CHARS])
    return Task.objects.create(
        owner=owner,
        text=body[: settings.ORCHESTRA_MAX_TASK_CHARS],
        benchmark="composite",
        domain=domains.pop() if len(domains) == 1 else "",
        decomposable=True,
        metadata={"items": [{**p, "recorded_pairs": [list(pair) for pair in p["recorded_pairs"]]} for p in parts]},
    )


@dataclass(frozen=True)
class TasksMade:
    """What a bulk task creation gave."""

    task_ids: list[int]  # every task of the sample (or file), in its order
    created: int  # of them, made now
    existing: int  # of them, the owner's already (the same benchmark item), not made again


@transaction.atomic
def tasks_from_benchmark(*, owner: User, benchmark: str, n: int, seed: int = 0) -> TasksMade:
    """Checker-verified tasks of a seeded sample of `n` items of a vendored benchmark
    (`orchestrator.benchmark_tasks`). An item the owner has a task of already (the same
    benchmark and `metadata.item_id`) is not made again, so a larger `n` with the same seed
    adds only the new items, and a collection over the benchmark's tasks has each item once."""
    try:
        specs = benchmark_tasks(benchmark, n, seed)
    except ValueError as exc:
        raise Invalid("benchmark" if benchmark not in BENCHMARKS else "n", str(exc)) from None
    for spec in specs:
        check_task_text(spec.text)
    User.objects.select_for_update().filter(pk=owner.pk).first()  # one such creation per owner at a time
    rows = Task.objects.filter(
        owner=owner, benchmark__in={spec.benchmark for spec in specs}, metadata__item_id__in=[s.item_id for s in specs]
    )
    had = {(task.benchmark, task.metadata.get("item_id")): task.pk for task in rows.only("pk", "benchmark", "metadata")}
    new = [spec for spec in specs if (spec.benchmark, spec.item_id) not in had]
    made = {(task.benchmark, task.metadata["item_id"]): task.pk for task in _bulk_create(owner, new)}
    ids = [had.get((spec.benchmark, spec.item_id)) or made[spec.benchmark, spec.item_id] for spec in specs]
    return TasksMade(task_ids=ids, created=len(new), existing=len(specs) - len(new))


def invalid_lines(errors: list[tuple[int, str]]) -> Invalid:
    """A 422 naming every bad line of a JSONL body: `errors` lists `{line, message}`."""
    error = Invalid("body", str(TaskFormatError(errors)))
    error.extra["errors"] = [{"line": line, "message": message} for line, message in errors]
    return error


def check_import_specs(specs: Sequence[tuple[int, TaskSpec]]) -> None:
    """What the JSONL format cannot see: the task text limit, values PostgreSQL can store."""
    errors = []
    for line, spec in specs:
        problems = []
        try:
            check_task_text(spec.text)
        except ApplicationError as exc:
            problems.append(f'"prompt": {exc.message}')
        try:
            check_storable([spec.text, spec.gold, spec.benchmark, spec.metadata])
        except UnstorableText as exc:
            problems.append(str(exc))
        if problems:
            errors.append((line, "; ".join(problems)))
    if errors:
        raise invalid_lines(errors)


@transaction.atomic
def tasks_import(*, owner: User, text: str) -> TasksMade:
    """Every line of a user's JSONL (`orchestrator.task_jsonl`) as a task; all or nothing: any
    bad line raises one 422 naming every bad line, and nothing is written. A task the owner has
    already (the same prompt, gold answer, checker, benchmark and item id) is not made again, so
    importing a file twice adds nothing, and a collection over the tasks has each once."""
    lines = text.split("\n")  # not splitlines(): JSON strings may hold U+2028 and the like
    try:
        specs = read_tasks(lines)
    except TaskFormatError as exc:
        raise invalid_lines(exc.errors) from None
    check_import_specs(specs)
    if not specs:
        raise Invalid("body", "The file holds no task.")
    User.objects.select_for_update().filter(pk=owner.pk).first()  # one such creation per owner at a time
    rows = Task.objects.filter(owner=owner, text__in={spec.text for _, spec in specs}).only(
        "pk", "text", "gold_answer", "checker", "benchmark", "metadata"
    )
    had: dict[tuple[str, ...], int] = {
        (t.text, t.gold_answer, t.checker, t.benchmark, str(t.metadata.get("item_id", ""))): t.pk for t in rows
    }
    new: dict[tuple[str, ...], TaskSpec] = {}
    for _, spec in specs:
        key = _import_key(spec)
        if key not in had:
            new.setdefault(key, spec)
    made = dict(zip(new, (task.pk for task in _bulk_create(owner, list(new.values()))), strict=True))
    ids = [had.get(_import_key(spec)) or made[_import_key(spec)] for _, spec in specs]
    return TasksMade(task_ids=ids, created=len(made), existing=len(specs) - len(made))


def _import_key(spec: TaskSpec) -> tuple[str, ...]:
    return (spec.text, spec.gold, spec.checker, spec.benchmark, spec.item_id)


def _bulk_create(owner: User, specs: Sequence[TaskSpec]) -> list[Task]:
    return Task.objects.bulk_create(
        [
            Task(
                owner=owner,
                text=spec.text,
                gold_answer=spec.gold,
                checker=spec.checker,
                benchmark=spec.benchmark,
                domain=spec.domain,
                metadata=spec.metadata,
            )
            for spec in specs
        ],
        batch_size=500,
    )
