import shutil
from pathlib import Path

import pytest

from orchestrator.outcomes import OutcomeRecord, read_outcomes
from workers.importers import SOURCES
from workers.importers.__main__ import Summary, main


def test_all_writes_every_source_prices_and_licences(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["all", "--shared", str(shared), "--out-dir", str(tmp_path)]) == 0

    counts = {source: sum(1 for _ in read_outcomes(tmp_path / f"{source}.jsonl.gz")) for source in SOURCES}
    assert counts == {
        "routerbench": 5,
        "llmrouter": 8,
        "routellm": 8,
        "routerarena": 2,
        "bbh": 4,
        "reflexion": 5,
        "program_of_thoughts": 8,
    }
    for source in SOURCES:
        assert (tmp_path / "licenses" / f"{source}.LICENSE").read_text()
    assert "no LICENSE file" in (tmp_path / "licenses" / "routerbench.LICENSE").read_text()
    prices = (tmp_path / "prices.json").read_text()
    assert '"gpt-4"' in prices and '"input_per_mtok": 10.0' in prices
    out = capsys.readouterr().out
    assert "routerbench: 5 records" in out
    assert "    1  empty score cell" in out
    assert "assumed completion tokens per call: 256" in out
    # routellm got GSM8K gold from benchmarks/gsm8k and costs from the built price table.
    gsm8k = [r for r in read_outcomes(tmp_path / "routellm.jsonl.gz") if r.benchmark == "gsm8k"]
    assert {r.gold for r in gsm8k} == {"7", "14"}
    assert any(r.cost_usd is not None for r in gsm8k if r.model == "gpt-4-1106-preview")


def test_one_source_with_an_assumed_completion_length(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "llmrouter.jsonl.gz"

    main(
        [
            "llmrouter",
            "--src",
            str(shared / "llmrouter"),
            "--out",
            str(out),
            "--assume-completion-tokens",
            "64",
        ]
    )

    assert {r.completion_tokens for r in read_outcomes(out)} == {64}


def test_one_source_needs_src_and_out(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["bbh", "--out", str(tmp_path / "x.jsonl.gz")])


def test_a_repeated_item_model_primitive_is_an_error(shared: Path) -> None:
    record = OutcomeRecord(
        source="s",
        item_id="i",
        split=None,
        benchmark="b",
        domain="math",
        prompt="p",
        gold=None,
        model="m",
        primitive="direct",
        response=None,
        score=1.0,
        prompt_tokens=None,
        completion_tokens=None,
        cost_usd=None,
        latency_s=None,
    )
    with pytest.raises(ValueError, match="repeated"):
        list(Summary().count([record, record]))


def test_all_is_all_or_nothing(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    assert main(["all", "--shared", str(shared), "--out-dir", str(out_dir)]) == 0
    before = {path: path.read_bytes() for path in out_dir.rglob("*") if path.is_file()}
    broken = tmp_path / "shared"
    shutil.copytree(shared, broken)
    last, (_, folder) = list(SOURCES.items())[-1]
    (broken / folder / "LICENSE").unlink()  # the last source fails, after every other converted
    (broken / "llmrouter" / "LICENSE").write_text("another licence\n")

    argv = ["all", "--shared", str(broken), "--out-dir", str(out_dir), "--assume-completion-tokens", "64"]
    assert main(argv) == 2

    assert "LICENSE is missing" in capsys.readouterr().err
    after = {path: path.read_bytes() for path in out_dir.rglob("*") if path.is_file()}
    assert after == before  # prices.json and the sources converted before the failure included
    assert not list(out_dir.glob(".importing-*"))
    assert last == "program_of_thoughts"
