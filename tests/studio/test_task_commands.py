"""Tasks from the vendored benchmarks and from a user's JSONL: the services and their commands
(`manage.py tasks_from_benchmark`, `manage.py import_tasks`), on real PostgreSQL."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from orchestrator.benchmark_tasks import BENCHMARKS, all_tasks
from providers.checkers import check
from studio.errors import Invalid
from studio.models import Task, User
from studio.services.tasks import tasks_from_benchmark, tasks_import
from studio.services.verification import ITEM_KEYS
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann() -> User:
    return UserFactory(username="ann")


def references(benchmark: str) -> dict[str, str]:
    return {spec.item_id: spec.reference for spec in all_tasks(benchmark)}


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_each_benchmark_makes_tasks_whose_reference_passes_their_checker(ann: User, benchmark: str) -> None:
    n = 2 if benchmark in ("humaneval", "mbpp") else 4  # code runs in the sandbox
    made = tasks_from_benchmark(owner=ann, benchmark=benchmark, n=n, seed=3)

    tasks = list(Task.objects.filter(pk__in=made.task_ids))
    assert (made.created, made.existing, len(tasks)) == (n, 0, n)
    reference = references(benchmark)
    for task in tasks:
        assert task.owner == ann and task.gold_answer and task.checker and task.domain
        # what a run's verification reads from the row (studio.services.verification) is enough
        item = {"prompt": task.text, **{k: task.metadata[k] for k in ITEM_KEYS if k in task.metadata}}
        result = check(task.checker, reference[task.metadata["item_id"]], task.gold_answer, item=item)
        assert result.passed, (task.metadata["item_id"], result.detail)
        assert not check(task.checker, "I do not know.", task.gold_answer, item=item).passed


def test_the_same_seed_makes_the_same_items_and_a_larger_n_only_adds(ann: User) -> None:
    first = tasks_from_benchmark(owner=ann, benchmark="gsm8k", n=5, seed=1)
    again = tasks_from_benchmark(owner=ann, benchmark="gsm8k", n=8, seed=1)
    other = tasks_from_benchmark(owner=UserFactory(), benchmark="gsm8k", n=5, seed=1)

    assert (again.created, again.existing) == (3, 5) and again.task_ids[:5] == first.task_ids
    assert Task.objects.filter(owner=ann).count() == 8

    def items(ids: list[int]) -> list[str]:
        by_id = {task.pk: task.metadata["item_id"] for task in Task.objects.filter(pk__in=ids)}
        return [by_id[pk] for pk in ids]

    assert items(other.task_ids) == items(first.task_ids)  # another owner, the same sample
    assert tasks_from_benchmark(owner=ann, benchmark="gsm8k", n=5, seed=2).created > 0


def test_bad_requests_name_their_field(ann: User) -> None:
    with pytest.raises(Invalid, match="Unknown benchmark 'chess'") as unknown:
        tasks_from_benchmark(owner=ann, benchmark="chess", n=1)
    with pytest.raises(Invalid, match="n must be within 1 and 164") as too_many:
        tasks_from_benchmark(owner=ann, benchmark="humaneval", n=200)
    assert (unknown.value.extra["field"], too_many.value.extra["field"]) == ("benchmark", "n")
    assert Task.objects.count() == 0


def test_the_command_makes_tasks_and_says_how_many(ann: User, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("tasks_from_benchmark", "--benchmark", "bfcl_parallel", "--n", "3", "--seed", "4", "--owner", "ann")
    assert capsys.readouterr().out.strip() == "3 task(s) of bfcl_parallel made for ann."
    call_command("tasks_from_benchmark", "--benchmark", "bfcl_parallel", "--n", "4", "--seed", "4", "--owner", "ann")
    assert "1 task(s) of bfcl_parallel made for ann (3 of the sample were there already)." in capsys.readouterr().out
    tasks = Task.objects.filter(owner__username="ann")
    assert tasks.count() == 4 and {task.metadata["category"] for task in tasks} == {"parallel"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--benchmark", "chess", "--n", "2", "--owner", "ann"], "Unknown benchmark 'chess'; use one of gsm8k,"),
        (
            ["--benchmark", "mbpp", "--n", "0", "--owner", "ann"],
            r"n must be within 1 and 397 \(the items of mbpp\), not 0",
        ),
        (["--benchmark", "mbpp", "--n", "400", "--owner", "ann"], "not 400"),
        (["--benchmark", "mbpp", "--n", "2", "--owner", "nobody"], "There is no user 'nobody'"),
    ],
)
def test_the_commands_errors_are_one_sentence(ann: User, arguments: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("tasks_from_benchmark", *arguments)
    assert Task.objects.count() == 0


def jsonl(*records: object) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


GOOD = {"prompt": "What is 6*7?", "gold": "42", "checker": "gsm8k", "domain": "math"}


def test_a_users_jsonl_imports_all_its_lines(ann: User, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.jsonl.gz"
    code = {
        "prompt": "def add(a, b):\n",
        "gold": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "checker": "mbpp",
        "domain": "code",
        "benchmark": "mine",
        "metadata": {"entry_point": "add", "item_id": "mine/add"},
    }
    path.write_bytes(gzip.compress(jsonl(GOOD, "", code).encode()))

    call_command("import_tasks", str(path), "--owner", "ann")

    assert capsys.readouterr().out.strip() == "2 task(s) imported for ann."
    task = Task.objects.get(owner=ann, benchmark="mine")
    item = {"prompt": task.text, **{k: task.metadata[k] for k in ITEM_KEYS if k in task.metadata}}
    assert check(task.checker, "```python\ndef add(a, b):\n    return a + b\n```", task.gold_answer, item=item).passed
    assert not check(
        task.checker, "```python\ndef add(a, b):\n    return a - b\n```", task.gold_answer, item=item
    ).passed


def test_a_bad_line_names_every_error_and_writes_nothing(ann: User, tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(jsonl(GOOD, "{oops", {**GOOD, "checker": "astrology"}, GOOD, {**GOOD, "prompt": ""}))

    with pytest.raises(CommandError) as caught:
        call_command("import_tasks", str(path), "--owner", "ann")

    lines = str(caught.value).splitlines()
    assert lines[0] == "3 invalid line(s), so nothing was imported:"
    assert lines[1].startswith("  line 2: not valid JSON")
    assert lines[2].startswith("  line 3: \"checker\" 'astrology' is not one of")
    assert lines[3] == '  line 5: "prompt" must be a non-empty string'
    assert Task.objects.count() == 0


def test_the_studios_own_limits_are_checked_per_line(ann: User, settings: Any) -> None:
    settings.ORCHESTRA_MAX_TASK_CHARS = 20
    text = jsonl(GOOD, {**GOOD, "prompt": "x" * 21}, {**GOOD, "gold": "4\u00002"})

    with pytest.raises(Invalid) as caught:
        tasks_import(owner=ann, text=text)

    errors = caught.value.extra["errors"]
    assert [error["line"] for error in errors] == [2, 3]
    assert "the limit is 20" in errors[0]["message"] and "NUL character" in errors[1]["message"]
    assert Task.objects.count() == 0


def test_the_import_commands_file_errors(ann: User, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_tasks", str(tmp_path / "missing.jsonl"), "--owner", "ann")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(CommandError, match="The file holds no task"):
        call_command("import_tasks", str(tmp_path / "empty.jsonl"), "--owner", "ann")
    (tmp_path / "latin1.jsonl").write_bytes('{"prompt": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(CommandError, match="is not UTF-8 text"):
        call_command("import_tasks", str(tmp_path / "latin1.jsonl"), "--owner", "ann")
    with pytest.raises(CommandError, match="There is no user 'bob'"):
        call_command("import_tasks", str(tmp_path / "empty.jsonl"), "--owner", "bob")
