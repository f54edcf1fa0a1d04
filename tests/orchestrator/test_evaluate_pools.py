"""The unseen-pools protocol (`orchestrator.evaluate_pools`): splits, tables, probes, the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from orchestrator.evaluate_pools import main
from orchestrator.evaluate_pools_report import cheap_end_line
from orchestrator.evaluate_report import MethodResult, PointResult
from orchestrator.offline.items import single_pair_points
from orchestrator.offline.pools import cheap_end, draw_splits, nested_probes, split_tables
from orchestrator.outcomes import OutcomeRecord
from orchestrator.policies import COST_PRESETS
from orchestrator.routing.table import load_table
from tests.orchestrator.synthetic import write

BIG = [f"big-{n}" for n in range(9)]  # a source with enough models for models splits
SMALL = ["small-a", "small-b", "small-c"]


def _records() -> list[OutcomeRecord]:
    rng = np.random.default_rng(0)
    records = []
    for source, models, n in (("big", BIG, 120), ("small", SMALL, 60)):
        for i in range(n):
            split: Literal["train", "test"] | None = None
            if source == "big":
                split = "test" if i % 4 == 0 else "train"
            for m, model in enumerate(models):
                records.append(
                    OutcomeRecord(
                        source=source,
                        item_id=f"{source}.{i}",
                        split=split,
                        benchmark=f"{source}-bench",
                        domain="math",
                        prompt=f"{source} question {i}",
                        gold=None,
                        model=model,
                        primitive="direct",
                        response=None,
                        score=float(rng.random() < 0.3 + 0.07 * m),
                        prompt_tokens=100,
                        completion_tokens=10,
                        cost_usd=1e-4 * (m + 1),
                        latency_s=None,
                    )  # fmt: skip
                )
    return records


@pytest.fixture
def outcomes(tmp_path: Path) -> Path:
    return write(tmp_path / "two-sources.jsonl.gz", _records())


def test_splits_hold_out_some_of_a_big_sources_models_and_each_whole_source(outcomes: Path) -> None:
    table = load_table([outcomes])
    splits = draw_splits(table, per_source=4)
    models = [s for s in splits if s.kind == "models"]
    assert [s.name for s in models] == [f"big/models-{n}" for n in range(4)]  # small has too few models
    assert all(4 <= len(s.unseen) <= 6 and set(s.unseen) <= set(BIG) for s in models)
    assert len({s.unseen for s in models}) > 1  # drawn, not one split repeated
    assert draw_splits(table, per_source=4) == splits  # the same splits every time
    assert {(s.name, s.unseen) for s in splits if s.kind == "source"} == {
        ("big/source", tuple(BIG)), ("small/source", tuple(SMALL))
    }  # fmt: skip


def test_a_split_tests_unseen_models_on_items_training_never_saw(outcomes: Path) -> None:
    table = load_table([outcomes])
    for split in draw_splits(table, per_source=3):
        train, test = split_tables(table, split)
        assert {m for m, _ in test.pairs} == set(split.unseen)
        assert not {m for m, _ in train.pairs} & set(split.unseen)
        assert not set(train.keys()) & set(test.keys())
        if split.kind == "models":
            assert set(test.splits) == {"test"} and set(test.sources) == {"big"}
            assert {"big", "small"} == set(train.sources)  # the source's other models, and the other source
        else:
            assert set(test.sources) == {split.source} and split.source not in set(train.sources)


def test_probes_are_nested_and_leave_the_same_test(outcomes: Path) -> None:
    table = load_table([outcomes])
    _, test = split_tables(table, draw_splits(table, per_source=1)[0])
    probes, rest = nested_probes(test, [5, 10, 20], seed=3)
    assert [probes[k].n_items for k in (5, 10, 20)] == [5, 10, 20]
    assert set(probes[5].keys()) < set(probes[10].keys()) < set(probes[20].keys())
    assert not set(probes[20].keys()) & set(rest.keys())
    assert rest.n_items == test.n_items - 20


def test_the_cli_prints_a_table_per_k_and_resumes(outcomes: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "results.jsonl"
    argv = ["--outcomes", str(outcomes), "--splits", "2", "--k", "5,10", "--seeds", "0,1",
            "--methods", "best_single,cheapest,random", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "K = 5 probe items" in printed and "K = 10 probe items" in printed
    assert "4 splits" in printed  # big/models-0, big/models-1, big/source, small/source
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 * 2 * 2 * 3  # splits x seeds x K x methods
    assert all(0 <= row["aiq"] <= 1 for row in rows if row["method"] != "random")
    assert main(argv) == 0  # everything is there: nothing runs again
    assert len(out.read_text().splitlines()) == len(rows)
    assert "K = 10 probe items" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # other settings, same file
        main([*argv, "--max-test-items", "20"])
    assert "holds results made otherwise" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--k", "0"], "--k must list probe sizes"),
        (["--k", "ten"], "comma-separated list"),
        (["--methods", "oracle2"], "unknown method"),
        (["--only", "nope/models-9"], "no such split"),
    ],
)
def test_bad_arguments_are_one_line(outcomes: Path, argv: list[str], words: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--outcomes", str(outcomes), "--methods", "cheapest", *argv] if "--methods" not in argv else
             ["--outcomes", str(outcomes), *argv])  # fmt: skip
    assert exit_.value.code == 2
    assert words in capsys.readouterr().err


def test_a_results_file_that_is_not_json_lines_is_refused(outcomes: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text("not json\n")
    with pytest.raises(SystemExit):
        main(["--outcomes", str(outcomes), "--methods", "cheapest", "--out", str(out)])
    assert "results.jsonl:1: not a JSON line" in capsys.readouterr().err
    assert out.read_text() == "not json\n"


def test_the_cheap_end_compares_the_cheap_preset_with_the_cheapest_model_and_the_probes_best_pair(
    outcomes: Path,
) -> None:
    table = load_table([outcomes])
    _, test = split_tables(table, draw_splits(table, per_source=1)[0])
    probes, rest = nested_probes(test, [20], seed=0)
    singles = single_pair_points(rest)
    point = PointResult(knob=COST_PRESETS["cheap"], macro_acc=0.5, cost_per_query=2e-4, calls_per_query=1.0,
                        per_domain={}, per_benchmark={}, violations=0)  # fmt: skip
    result = MethodResult(name="learned", points=[point])
    cheap = cheap_end(result, probes[20], singles)
    assert cheap is not None
    assert cheap["macro"] == 0.5 and cheap["cost"] == 2e-4
    assert cheap["cheapest_macro"] == min(singles.values())[1]  # the cheapest model's accuracy on test
    # The probe's best pair at λ = 1: its accuracy on the probe less its cost in units of the dearest.
    probe = probes[20]
    acc, cost = np.nanmean(probe.score, axis=0), np.nanmean(probe.cost, axis=0)
    best = int(np.argmax(acc - COST_PRESETS["cheap"] * cost / cost.max()))
    assert cheap["probe_pair"] == probe.pairs[best][0]
    assert cheap["probe_pair_cost"] == singles[probe.pairs[best][0]][0]
    line = cheap_end_line([{"method": "learned", "split": "s", "cheap": cheap}])
    assert line is not None and "held in" in line
    held = cheap["macro"] >= cheap["cheapest_macro"] and cheap["cost"] <= cheap["probe_pair_cost"]
    assert line.endswith(f"held in {int(held)} of 1 splits")
    assert cheap_end(MethodResult(name="learned"), probe, singles) is None  # no cheap point: nothing to say


def test_the_summary_sets_the_learned_policy_against_the_zero_router_per_split() -> None:
    from orchestrator.evaluate_pools_report import summarize

    def row(split: str, method: str, aiq_rb: float, **extra: object) -> dict:
        return {"split": split, "seed": 0, "k": 50, "method": method, "aiq": aiq_rb + 0.05, "aiq_rb": aiq_rb, **extra}

    held = {"best": {"held": True}, "balanced": {"held": True}, "cheap": {"held": False}}
    rows = [
        row("a/models-0", "learned", 0.70, dominated=0, presets=held),
        row("a/models-0", "zero", 0.68, dominated=2),
        row("a/source", "learned", 0.60, dominated=3, presets={**held, "best": {"held": False}}),
        row("a/source", "zero", 0.61),
    ]
    printed = summarize(rows, ["learned", "zero"], [50])
    own = " (the zero router's own: 2)"
    assert "a/models-0: learned AIQ-RB 0.7000 vs zero 0.6800 (+0.0200); dominated points: 0" + own in printed
    assert "a/source: learned AIQ-RB 0.6000 vs zero 0.6100 (-0.0100); dominated points: 3\n" in printed + "\n"
    assert "learned - zero (AIQ-RB): mean +0.0050; learned >= zero in 1 of 2 splits" in printed
    # a/source's zero row has no count: one split x seed counted
    assert "the zero router's own dominated points (by a single pair or its other points): 2, in 1 of 1" in printed
    assert "presets held (every seed): best in 1 of 2, balanced in 2 of 2, cheap in 0 of 2 splits" in printed


def test_the_library_hands_over_rows_as_they_finish_and_skips_those_done(outcomes: Path) -> None:
    from orchestrator.errors import UsageError
    from orchestrator.offline.pools import PoolsConfig, evaluate_pools

    config = PoolsConfig(outcomes=(outcomes,), splits=1, k=(10,), seeds=(0,), methods=("zero", "cheapest"))
    handed: list[list[dict]] = []
    first = evaluate_pools(config, on_rows=handed.append)
    assert [len(rows) for rows in handed] == [2] * len(first.splits)  # one batch per split x seed, one row per method
    assert sum(handed, []) == first.rows
    assert all(row["fit_s"] >= 0 and row["route_s"] >= 0 for row in first.rows)
    timing = next(line for line in first.text().splitlines() if line.startswith("time: "))
    assert f"over {len(first.rows)} rows; per method (s): zero " in timing and ", cheapest " in timing
    again: list[list[dict]] = []
    second = evaluate_pools(config, done=first.rows, on_rows=again.append)
    assert again == [] and second.rows == first.rows  # nothing run twice
    changes: list[tuple[dict[str, Any], str]] = [
        ({"k": (0,)}, "--k must list probe sizes of at least 1 item"),
        ({"only": ("nosuch",)}, "no such split: nosuch"),
        ({"methods": ("nosuch",)}, "unknown method(s) nosuch"),
    ]
    for change, words in changes:
        with pytest.raises(UsageError, match=re.escape(words)):
            evaluate_pools(PoolsConfig(**{**config.__dict__, **change}))
    with pytest.raises(UsageError, match="made otherwise"):
        evaluate_pools(PoolsConfig(**{**config.__dict__, "max_test_items": 5}), done=first.rows)
