"""The evaluations as a library (`orchestrator.offline.items`, `.composites`): a typed config in, a report
out, progress as it goes, and a config it cannot use refused with `UsageError` naming the
option, never an exit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import evaluate
from orchestrator.errors import UsageError
from orchestrator.offline.items import ItemsConfig, evaluate_items
from tests.orchestrator.synthetic import write
from tests.orchestrator.test_evaluate_cli import pool_records


@pytest.fixture(autouse=True)
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def outcomes(tmp_path: Path) -> Path:
    right = {"cheap": set(range(0, 20, 2)), "dear": set(range(20))}
    return write(tmp_path / "pool.jsonl.gz", pool_records({"cheap": 0.001, "dear": 0.01}, 20, right=right, split_at=10))


def test_a_config_in_a_report_out_with_progress(outcomes: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    config = ItemsConfig(outcomes=(outcomes,), methods=("cheapest", "oracle"), seed=1)
    result = evaluate_items(config, lambda done, total, method: seen.append((done, total, method)))
    assert seen == [(0, 2, "cheapest"), (1, 2, "oracle"), (2, 2, "")]
    assert [r.name for r in result.results] == ["cheapest", "oracle"]
    assert result.setting.description == "upstream split"
    assert (result.weak, result.strong) == ("cheap", "dear")
    data = result.to_json()
    assert data["seed"] == 1 and set(data["methods"]) == {"cheapest", "oracle"}
    assert data["methods"]["oracle"]["macro_acc"] == pytest.approx(1.0)
    result.plot(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def untimed(report: dict[str, Any]) -> dict[str, Any]:
    """The report less its seconds (embedding, each method's fitting and routing), which no two
    runs share."""
    methods = {
        name: {k: v for k, v in m.items() if k not in ("fit_s", "route_s")} for name, m in report["methods"].items()
    }
    return {**{k: v for k, v in report.items() if k != "embed_s"}, "methods": methods}


def test_the_report_is_the_clis(outcomes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert evaluate.main(["--outcomes", str(outcomes), "--methods", "cheapest,oracle", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = evaluate_items(ItemsConfig(outcomes=(outcomes,), methods=("cheapest", "oracle")))
    assert untimed(json.loads(out.read_text())) == untimed(json.loads(json.dumps(result.to_json())))
    assert result.lines() and all(line in printed for line in result.lines())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"outcomes": (Path("/nonexistent/pool.jsonl.gz"),)}, "no such file: /nonexistent/pool.jsonl.gz"),
        ({"probe": 5}, "--probe needs --train"),
        ({"probe": -1}, "--probe must be a non-negative number"),
        ({"methods": ("cheapest", "nosuch")}, "unknown method(s) nosuch"),
        ({"methods": ()}, "unknown method(s) (none given)"),
        ({"max_test_items": 0}, "--max-test-items must be a positive number"),
        ({"methods": ("learned",), "learned": {"threds": 1}}, "threds: not a known option"),
    ],
)
def test_a_config_it_cannot_use_is_a_usage_error(outcomes: Path, change: dict, message: str) -> None:
    config = ItemsConfig(outcomes=(outcomes,), methods=("cheapest",))
    with pytest.raises(UsageError) as refused:
        evaluate_items(ItemsConfig(**{**config.__dict__, **change}))
    assert message in str(refused.value)


def test_the_clis_options_raise_for_a_caller_that_reports_them(outcomes: Path) -> None:
    """`evaluate.options`: argparse's own errors (an option without its value, an unknown
    option) as well as the library's, raised, not printed and exited."""
    for argv, message in [
        (["--outcomes", str(outcomes), "--json"], "expected one argument"),
        (["--outcomes", str(outcomes), "--colour"], "unrecognized arguments: --colour"),
        (["--outcomes", str(outcomes), "--methods", "nosuch"], "unknown method(s) nosuch"),
    ]:
        with pytest.raises(UsageError) as refused:
            evaluate.options(argv)
        assert message in str(refused.value)
    config, report, plot = evaluate.options(["--outcomes", str(outcomes), "--methods", "cheapest", "--seed", "3"])
    assert (config.methods, config.seed, report, plot) == (("cheapest",), 3, None, None)


def test_composites_a_config_in_a_report_out_with_progress(tmp_path: Path) -> None:
    from orchestrator.offline.composites import CompositesConfig, evaluate_composites
    from tests.orchestrator.test_composite import mixed_files

    path, prices = mixed_files(tmp_path)
    seen: list[tuple[int, int, str]] = []
    config = CompositesConfig(
        outcomes=(path,), prices=prices, seeds=(0,), train_count=40, test_count=30,
        methods=("always_delegate", "always_decompose"), sensitivity=(0.2,),
    )  # fmt: skip
    result = evaluate_composites(config, lambda done, total, label: seen.append((done, total, label)))
    assert [step[:2] for step in seen] == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert seen[0][2] == "always_delegate (seed 0, penalty 0)" and seen[-1][2] == ""
    data = result.to_json()
    assert data["kind"] == "composites" and data["summary"]["order"] == ["always_delegate", "always_decompose"]
    assert set(data["summary"]["sensitivity"]) == {"0", "0.2"}
    assert result.text().startswith("Assumptions: a delegated call scores each part")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"methods": ("nope",)}, "unknown method(s) nope"),
        ({"sensitivity": (0.0, 2.0)}, "within [0, 1]"),
        ({"outcomes": (Path("missing.jsonl"),)}, "no such file: missing.jsonl"),
        ({"seeds": ()}, "--seeds needs at least one seed"),
        ({"methods": ("learned",), "learned": {"threds": 1}}, "threds: not a known option"),
    ],
)
def test_composites_a_config_it_cannot_use_is_a_usage_error(tmp_path: Path, change: dict, message: str) -> None:
    from orchestrator.offline.composites import CompositesConfig, evaluate_composites
    from tests.orchestrator.test_composite import mixed_files

    path, prices = mixed_files(tmp_path)
    config = CompositesConfig(outcomes=(path,), prices=prices, seeds=(0,), train_count=40, test_count=30)
    with pytest.raises(UsageError) as refused:
        evaluate_composites(CompositesConfig(**{**config.__dict__, **change}))
    assert message in str(refused.value)
