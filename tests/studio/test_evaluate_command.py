"""`manage.py evaluate`: the offline evaluation, stored as an EvaluationRun."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from studio.management.commands.evaluate import Command
from studio.models import EvaluationRun
from tests.orchestrator.synthetic import record, write

pytestmark = pytest.mark.django_db


def outcome_file(path: Path) -> Path:
    """Ten items, two models: `cheap` right on even items at a tenth of `strong`'s cost."""
    records = []
    for i in range(10):
        records.append(record(f"i{i}", "cheap", 1.0 if i % 2 == 0 else 0.0, 0.001))
        records.append(record(f"i{i}", "strong", 1.0, 0.01))
    return write(path / "synth.jsonl.gz", records)


def manage(*args: str) -> int:
    """The command's body as `manage.py evaluate ARGS` runs it (run_from_argv adds only
    django.setup() and closing connections, which would end the test's transaction)."""
    return Command().evaluate(list(args))


def test_the_report_is_stored_for_the_studio(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = outcome_file(tmp_path)
    with override_settings(DATA_DIR=tmp_path):
        code = manage("--outcomes", str(outcomes), "--methods", "cheapest,oracle", "--seed", "1")
    assert code == 0, capsys.readouterr()
    run = EvaluationRun.objects.get()
    assert (run.status, run.progress) == ("succeeded", 1.0)
    assert set(run.report["methods"]) == {"cheapest", "oracle"}
    oracle = run.report["methods"]["oracle"]
    assert oracle["macro_acc"] == 1.0  # strong is right everywhere, so the oracle always is
    assert (tmp_path / "evaluations" / f"evaluation-{run.pk}.png").is_file()
    assert f"Stored as EvaluationRun {run.pk}" in capsys.readouterr().out


def test_a_bad_option_is_a_usage_error_recorded_as_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with override_settings(DATA_DIR=tmp_path):
        code = manage("--outcomes", str(tmp_path / "missing.jsonl.gz"))
    assert code == 2
    assert "no such file" in capsys.readouterr().err
    assert EvaluationRun.objects.get().status == "failed"


@pytest.mark.parametrize("named", [["--json"], ["--plot"]])
def test_an_output_option_without_its_file_fails_the_run(
    named: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = outcome_file(tmp_path)
    with override_settings(DATA_DIR=tmp_path):
        code = manage("--outcomes", str(outcomes), "--methods", "cheapest", *named)
    assert code == 2
    run = EvaluationRun.objects.get()
    assert run.status == "failed" and "options were refused" in run.message
