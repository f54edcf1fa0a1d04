"""`manage.py import_outcomes`: loads canonical files, makes the replay pool, is idempotent."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from orchestrator.outcomes import OutcomeRecord, write_outcomes
from studio.models import Admissibility, ModelEndpoint, OutcomeImport, RecordedOutcome

pytestmark = pytest.mark.django_db


def rec(item: str, model: str, primitive: str = "direct", **fields: object) -> OutcomeRecord:
    base: dict[str, object] = dict(
        source="fixture", item_id=item, split="test", benchmark="gsm8k", domain="math",
        prompt=f"prompt of {item}", gold="1", model=model, primitive=primitive, response="1",
        score=1.0, prompt_tokens=10, completion_tokens=2, cost_usd=0.001, latency_s=None,
    )  # fmt: skip
    base.update(fields)
    return OutcomeRecord(**base)  # type: ignore[arg-type]


@pytest.fixture
def outcomes_file(tmp_path: Path) -> Path:
    path = tmp_path / "fixture.jsonl.gz"
    write_outcomes(
        path,
        [
            rec("a", "big-model"),
            rec("a", "small-model", score=0.0, cost_usd=None, prompt_tokens=None, completion_tokens=None),
            rec("a", "small-model", "cot", response="so 1\nAnswer: 1"),
            rec("b", "big-model"),
        ],
    )
    return path


def run(*args: object) -> str:
    out = StringIO()
    call_command("import_outcomes", *[str(a) for a in args], "--no-progress", stdout=out)
    return out.getvalue()


def test_import_creates_records_endpoints_and_pairs(outcomes_file: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"small-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}))
    output = run(outcomes_file, "--prices", prices, "--pool", "replay-test")
    assert "4 records, 2 models, 3 (model, primitive) pairs" in output
    assert "1 costs computed from prices" in output

    assert RecordedOutcome.objects.count() == 4
    computed = RecordedOutcome.objects.get(model="small-model", primitive="direct")
    # 'prompt of a' is 11 characters: 3 tokens; 'response 1' one token.
    assert computed.cost_usd == Decimal("0.000005")
    endpoints = ModelEndpoint.objects.filter(pool__name="replay-test").order_by("name")
    assert [(e.name, e.model) for e in endpoints] == [
        ("big-model", "replay/big-model"),
        ("small-model", "replay/small-model"),
    ]
    assert endpoints[1].input_cost_per_mtok == Decimal("1.0")
    pairs = {(a.endpoint.name, a.primitive.name) for a in Admissibility.objects.select_related("endpoint", "primitive")}
    assert pairs == {("big-model", "direct"), ("small-model", "direct"), ("small-model", "cot")}


def test_reimport_is_idempotent(outcomes_file: Path) -> None:
    run(outcomes_file)
    assert "already imported" in run(outcomes_file)
    run(outcomes_file, "--force")
    assert RecordedOutcome.objects.count() == 4
    assert OutcomeImport.objects.count() == 1
    assert Admissibility.objects.count() == 3


def test_a_broken_line_imports_nothing_and_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl.gz"
    good = rec("a", "m").to_json()
    bad = json.dumps({**json.loads(good), "item_id": "b", "score": 7})
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join([good] * 1 + [bad]) + "\n")
    with pytest.raises(CommandError, match=r"Nothing was imported from broken.jsonl.gz: .*:2: score must be"):
        run(path)
    assert RecordedOutcome.objects.count() == 0
    assert ModelEndpoint.objects.count() == 0


def test_a_repeated_record_keeps_the_later_line_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "repeats.jsonl"
    write_outcomes(path, [rec("a", "m", score=0.0), rec("b", "m"), rec("a", "m", response="2", score=1.0)])
    output = run(path)
    assert "3 records" in output and "1 line(s) repeated an earlier record, the later line kept" in output
    assert RecordedOutcome.objects.count() == 2
    kept = RecordedOutcome.objects.get(item_id="a")
    assert (kept.response, kept.score) == ("2", 1.0)


def test_a_broken_line_after_a_merged_batch_still_imports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("studio.services.outcomes.BATCH", 2)
    path = tmp_path / "late.jsonl"
    lines = [rec(item, "m").to_json() for item in "abcde"]
    path.write_text("\n".join([*lines, json.dumps({**json.loads(lines[0]), "item_id": "z", "score": -1})]) + "\n")
    with pytest.raises(CommandError, match=r"Nothing was imported from late.jsonl: .*:6: score must be"):
        run(path)
    assert RecordedOutcome.objects.count() == 0
    path.write_text("\n".join(lines) + "\n")  # the staging table went with the failed import
    assert "5 records" in run(path)
    assert RecordedOutcome.objects.count() == 5


def test_missing_file_and_bad_prices_are_clear_errors(outcomes_file: Path, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No such file"):
        run(tmp_path / "nope.jsonl.gz")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input_per_mtok": 1}}))
    with pytest.raises(CommandError, match="needs input_per_mtok and output_per_mtok"):
        run(outcomes_file, "--prices", prices)
