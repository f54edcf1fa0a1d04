"""`python -m orchestrator.evaluate_rm` end to end on a tiny learnable outcome file."""

from __future__ import annotations

import json

import pytest
import torch

from orchestrator import evaluate_rm
from orchestrator.outcomes import write_outcomes
from orchestrator.reward.bestofn import GREEDY_LINES, LINES
from tests.orchestrator.synthetic_outcomes import lookup_embedder, outcome_records, synthetic_table

TINY_POLICY = {
    "policy": {"hidden": 32},
    "sft": {"reliability_epochs": 8, "epochs": 10, "batch_size": 32},
    "rl": {"iterations": 10, "tasks_per_iteration": 32, "group": 4},
    "threads": 1,
}
TINY_RM = {"model": {"hidden": 16}, "train": {"epochs": 4, "batch_size": 64, "lr": 5e-3, "threads": 1}}


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """Runs the CLI on the synthetic table (200 items, 80/20 split), tiny configs; returns
    (exit code, the JSON report, stdout)."""
    torch.set_num_threads(1)
    table, emb = synthetic_table(n=200, seed=0)
    outcomes = tmp_path / "synthetic.jsonl.gz"
    write_outcomes(outcomes, outcome_records(table))
    monkeypatch.setattr(evaluate_rm, "default_embedder", lookup_embedder(table, emb))
    (tmp_path / "rm.json").write_text(json.dumps(TINY_RM))
    (tmp_path / "policy.json").write_text(json.dumps(TINY_POLICY))

    def go(*extra: str) -> tuple[int, dict, str]:
        out = tmp_path / "report.json"
        argv = ["--outcomes", str(outcomes), "--json", str(out), "--rm-config", str(tmp_path / "rm.json")]
        code = evaluate_rm.main([*argv, "--policy-config", str(tmp_path / "policy.json"), *extra])
        return code, json.loads(out.read_text()), capsys.readouterr().out

    return go


def test_held_out_pairs_and_every_best_of_n_line_are_reported(run):
    code, report, text = run("--n", "4", "--seeds", "0")
    assert code == 0
    assert report["n"] == 4 and len(report["seeds"]) == 1
    seed = report["seeds"][0]
    assert (seed["train_items"], seed["test_items"]) == (160, 40)
    # the cheap pairs are right exactly on the easy side of the embedding, which OrchRM sees:
    # unseen test tasks' correct-over-incorrect pairs are ranked well above chance
    pairs = seed["pairs"]
    assert pairs["test/pairs/correct_over_incorrect"] > 20
    assert pairs["test/accuracy/correct_over_incorrect"] > 0.75
    assert pairs["test[synthetic]/accuracy/correct_over_incorrect"] == pairs["test/accuracy/correct_over_incorrect"]
    assert seed["rm_pairs"]["correct_over_incorrect"] > 0 and seed["distinct_candidates"] > 1
    lines = seed["lines"]["all"]
    assert set(lines) == {*LINES, *GREEDY_LINES}
    for name in ("n1", "rm", "rm_matched", "greedy", "rm_at_greedy"):
        assert lines[name]["executed_per_query"] == 1.0  # one plan executed
    assert 1.0 <= lines["majority"]["executed_per_query"] <= 4.0
    assert lines["oracle"]["executed_per_query"] == lines["majority"]["executed_per_query"]
    assert lines["oracle"]["cost_per_query"] == pytest.approx(lines["majority"]["cost_per_query"])
    assert all(line["scoring_tokens"] == 0 for line in lines.values())
    assert all(line["tokens_per_query"] == pytest.approx(110.0) for n, line in lines.items() if n in GREEDY_LINES)
    oracle = lines["oracle"]["macro_acc"]
    assert all(line["macro_acc"] <= oracle + 1e-12 for line in lines.values())  # pass@N bounds every line
    # choosing among the samples by OrchRM is no worse than taking one at random, at their cost
    assert lines["rm_matched"]["macro_acc"] >= lines["n1"]["macro_acc"]
    assert "rm_matched − n1:" in text and "rm_at_greedy − greedy:" in text and "scoring tokens 0" in text


def test_draws_of_the_candidates_are_averaged_and_the_first_is_the_single_draw(run):
    _, single, _ = run("--n", "3", "--seeds", "0")
    _, twice, text = run("--n", "3", "--seeds", "0", "--draws", "2")
    one, two = single["seeds"][0], twice["seeds"][0]
    assert twice["draws"] == two["draws"] == 2 and one["draws"] == 1
    gains = two["draw_gains"]["all"]
    assert len(gains) == 2 and one["draw_gains"]["all"] == [pytest.approx(gains[0])]  # draw 0 is the single draw
    lines = two["lines"]["all"]
    n1, matched = lines["n1"]["macro_acc"], lines["rm_matched"]["macro_acc"]
    assert 100 * (matched - n1) == pytest.approx(sum(gains) / 2)  # each line is the mean over the draws
    assert lines["greedy"] == one["lines"]["all"]["greedy"]  # the greedy plan is not drawn
    assert "rm_matched − n1 over the draws: seed 0" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--outcomes", "nope.jsonl"], "no such file: nope.jsonl"),
        (["--outcomes", "{file}", "--n", "0"], "--n must be at least 1"),
        (["--outcomes", "{file}", "--draws", "0"], "--draws must be at least 1"),
        (["--outcomes", "{file}", "--lam", "-1"], "--lam must be non-negative"),
        (["--outcomes", "{file}", "--rm-config", "{bad}"], "train.no_such_knob: not a known option"),
        (["--outcomes", "{file}", "--lam", "nan"], "must be a finite number, not nan"),
        (["--outcomes", "{file}", "--seeds", "-1"], "a seed is from 0 to"),
        (["--outcomes", "{file}", "--policy-config", "{listed}"], "not a JSON object but list"),
        (["--outcomes", "{file}", "--json", "{dir}"], "is a folder; give a file name"),
    ],
)
def test_bad_arguments_are_usage_errors(argv, message, tmp_path, capsys):
    table, _ = synthetic_table(n=10, seed=0)
    write_outcomes(tmp_path / "s.jsonl", outcome_records(table))
    (tmp_path / "bad.json").write_text(json.dumps({"train": {"no_such_knob": 1}}))
    (tmp_path / "listed.json").write_text("[1]")
    names = {"file": tmp_path / "s.jsonl", "bad": tmp_path / "bad.json", "listed": tmp_path / "listed.json"}
    argv = [a.format(dir=tmp_path, **names) for a in argv]
    with pytest.raises(SystemExit) as exc:
        evaluate_rm.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_seed_gives_the_same_figures_whatever_ran_before_it(run):
    _, first, _ = run("--n", "2", "--seeds", "1")
    torch.rand(1000)  # the global generator moves, as an earlier seed's run in the same process moves it
    _, again, _ = run("--n", "2", "--seeds", "1")
    fits = [{k: v for k, v in r["seeds"][0]["rm_fit"].items() if not k.startswith("time/")} for r in (first, again)]
    assert fits[0] == fits[1]
    assert again["seeds"][0]["pairs"] == first["seeds"][0]["pairs"]
