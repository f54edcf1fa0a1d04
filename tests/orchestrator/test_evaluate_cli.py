"""`python -m orchestrator.evaluate` end to end on tiny outcome files."""

from __future__ import annotations

import json

import pytest

from orchestrator import evaluate, evaluate_report
from orchestrator.evaluate_frontier import own_dominated
from orchestrator.offline import items
from tests.orchestrator.synthetic import record, write

FAST = "random,cheapest,best_single,oracle,always_decompose,self_consistency"


def pool_records(models: dict[str, float], n: int, *, right: dict[str, set[int]], split_at: int | None, source="synth"):
    """n items x models; model m is right on the items in right[m]; its cost is models[m]."""
    out = []
    for k in range(n):
        split = None if split_at is None else ("train" if k < split_at else "test")
        bench = "b1" if k % 2 else "b2"
        for model, cost in models.items():
            score = 1.0 if k in right[model] else 0.0
            prompt = f"math question {k}" if source == "synth" else f"math question {k} of {source}"  # clean splits
            fields = {"split": split, "benchmark": bench, "prompt": prompt, "source": source}
            out.append(record(f"q{k}", model, score, cost, **fields))
    return out


@pytest.fixture(autouse=True)
def embedding_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCHESTRA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def outcomes(tmp_path):
    # cheap is right on even items, dear on all: the oracle takes cheap on even, dear on odd
    right = {"cheap": set(range(0, 20, 2)), "dear": set(range(20))}
    return write(tmp_path / "pool.jsonl.gz", pool_records({"cheap": 0.001, "dear": 0.01}, 20, right=right, split_at=10))


def test_cli_reports_every_method_on_the_upstream_test_split(outcomes, tmp_path, capsys):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    code = evaluate.main(["--outcomes", str(outcomes), "--methods", FAST, "--json", str(out), "--plot", str(png)])
    assert code == 0
    text = capsys.readouterr().out
    assert "upstream split: 10 train items, 10 test items, 2 pairs" in text
    assert "always_decompose  n/a: the outcome table has no composite tasks" in text
    report = json.loads(out.read_text())
    assert report["items"] == 10 and report["models"] == ["cheap", "dear"]
    methods = report["methods"]
    assert methods["cheapest"]["macro_acc"] == pytest.approx(0.5)
    assert methods["cheapest"]["cost_per_query"] == pytest.approx(0.001)
    assert methods["best_single"]["macro_acc"] == pytest.approx(1.0)
    assert methods["oracle"]["macro_acc"] == pytest.approx(1.0)
    assert methods["oracle"]["cost_per_query"] == pytest.approx(0.0055)
    # AIQ over [.001, .01]: the single point (.001, .5) is flat .5 over it; (.01, 1.0) rises
    # from abstaining, .1 at .001 to 1 at .01, mean .55
    assert methods["cheapest"]["aiq"] == pytest.approx(0.5)
    assert methods["best_single"]["aiq"] == pytest.approx(0.55)
    # oracle (.0055, 1): H is .001/.0055 = .1818 at .001, 1 from .0055 -> mean over [.001, .01]
    # ((.1818+1)/2*.0045 + .0045)/.009 = .7955; APGR (.7955 - .5)/(1 - .5) = .5909
    assert methods["oracle"]["apgr"] == pytest.approx(0.590909, abs=1e-6)
    assert methods["cheapest"]["apgr"] == pytest.approx(0.0)
    assert methods["oracle"]["points"] == [[pytest.approx(0.0055), pytest.approx(1.0)]]
    assert "not_applicable" in methods["self_consistency"]
    assert png.stat().st_size > 1000


def test_cli_unseen_pool_with_probe(tmp_path):
    right = {"a": set(range(0, 12, 2)), "b": set(range(12))}
    train = write(tmp_path / "train.jsonl", pool_records({"a": 0.001, "b": 0.01}, 12, right=right, split_at=None))
    right = {"x": set(range(12)), "y": set()}
    records = pool_records({"x": 0.002, "y": 0.0005}, 12, right=right, split_at=None, source="new")
    test = write(tmp_path / "test.jsonl", records)
    out = tmp_path / "r.json"
    args = ["--train", str(train), "--outcomes", str(test), "--probe", "4", "--json", str(out)]
    assert evaluate.main([*args, "--methods", "best_single,cheapest,knn"]) == 0
    report = json.loads(out.read_text())
    assert report["items"] == 8 and report["probe_items"] == 4 and report["models"] == ["x", "y"]
    assert report["methods"]["best_single"]["macro_acc"] == pytest.approx(1.0)  # x, best on the probe
    assert report["methods"]["cheapest"]["cost_per_query"] == pytest.approx(0.0005)
    assert report["methods"]["knn"]["macro_acc"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--outcomes", "nope.jsonl"], "no such file: nope.jsonl"),
        (["--outcomes", "{pool}", "--probe", "3"], "--probe needs --train"),
        (["--outcomes", "{pool}", "--methods", "knn,bogus"], "unknown method(s) bogus"),
        (["--outcomes", "{pool}", "--train", "{other}"], "differ from --train's: pass --probe K"),
        (["--outcomes", "{pool}", "--train", "{other}", "--probe", "50"], "leaves no test items"),
        (["--outcomes", "{pool}", "--train", "{pool}"], "nothing is left to test on"),
    ],
)
def test_cli_bad_arguments_are_usage_errors(argv, message, outcomes, tmp_path, capsys):
    other = write(tmp_path / "other.jsonl", [record("z", "other-model", 1.0, 0.1)])
    argv = [a.format(pool=outcomes, other=other) for a in argv]
    with pytest.raises(SystemExit) as exc:
        evaluate.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_learned_unavailable_is_reported_not_stubbed(outcomes, capsys, monkeypatch):
    def broken(name, config, checkpoint=None):
        raise ImportError("No module named 'orchestrator.learning.method'")

    monkeypatch.setattr(items, "make_method", broken)
    assert evaluate.main(["--outcomes", str(outcomes), "--methods", "learned"]) == 0
    assert "learned: not available (No module named 'orchestrator.learning.method')" in capsys.readouterr().out


def test_report_json_has_no_nan():
    data = {"a": float("nan"), "b": [1.0, float("inf"), {"c": (2.0, float("-inf"))}], "d": "x"}
    assert evaluate_report.finite(data) == {"a": None, "b": [1.0, None, {"c": [2.0, None]}], "d": "x"}


def test_a_trained_checkpoint_is_evaluated_as_it_is(outcomes, tmp_path, capsys):
    """--checkpoint: the learned method is that checkpoint (its network and calibration), not
    one fitted here; so two evaluations of it route alike whatever their seed."""
    from orchestrator.learning.method import LearnedConfig
    from orchestrator.train_policy import train

    tiny = {"policy": {"hidden": 16}, "sft": {"reliability_epochs": 1, "epochs": 2}, "rl": {"iterations": 0}}
    checkpoint = tmp_path / "policy.pt"
    train([outcomes], out=checkpoint, seed=0, config=LearnedConfig.from_mapping(tiny), prices=None, show_progress=False)
    reports = []
    for seed in (0, 1):
        out = tmp_path / f"r{seed}.json"
        argv = ["--outcomes", str(outcomes), "--methods", "learned", "--checkpoint", str(checkpoint)]
        assert evaluate.main([*argv, "--seed", str(seed), "--json", str(out)]) == 0
        reports.append(json.loads(out.read_text())["methods"]["learned"])
    assert reports[0]["points"] == reports[1]["points"] and reports[0]["points"]


def test_a_checkpoint_that_cannot_serve_is_a_usage_error(outcomes, tmp_path, capsys):
    import torch

    old = tmp_path / "old.pt"
    torch.save({"embedding": "x"}, old)  # a checkpoint from before checkpoints carried their calibration
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    for path, words in ((old, "carries no calibration"), (broken, "cannot be loaded"), (tmp_path / "no.pt", "no such")):
        with pytest.raises(SystemExit) as exit:
            evaluate.main(["--outcomes", str(outcomes), "--methods", "learned", "--checkpoint", str(path)])
        assert exit.value.code == 2
        assert words in capsys.readouterr().err


def test_cli_reports_aiq_rb_the_zero_router_and_dominated_points(outcomes, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert evaluate.main(["--outcomes", str(outcomes), "--methods", "random,cheapest,zero", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "AIQ-RB" in text and "zero (best @ hull step 1)" in text
    assert "dominated points (by a single pair or the zero router, at no more cost): random" in text
    report = json.loads(out.read_text())
    zero = report["methods"]["zero"]
    # train: cheap (.001, .5) and dear (.01, 1.0) are the hull; the zero router walks it
    assert zero["knobs"] == [0.0, 0.25, 0.5, 0.75, 1.0] and zero["macro_acc"] == pytest.approx(1.0)
    # AIQ-RB of cheapest alone: flat .5 from .001 to c_max .01, / .01 = .45
    assert report["methods"]["cheapest"]["aiq_rb"] == pytest.approx(0.45)
    assert set(report["dominated_points"]) == {"random", "cheapest", "zero"}
    assert report["dominated_points"]["cheapest"] == 0
    # the zero router's own points, each against the single pairs and its other points
    assert report["dominated_points"]["zero"] == len(own_dominated(
        [tuple(p) for p in zero["points"]], {k: tuple(v) for k, v in report["single_pairs"].items()}))  # fmt: skip
    assert "the zero router's own, by a single pair or its other points (a router that reads no prompt): " in text
