"""Loading outcome files into a table, and the train/test and probe splits."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from orchestrator.routing.table import load_table, probe_split, split_table
from tests.orchestrator.synthetic import record, table, write


def test_load_table_keys_items_and_sorts_pairs(tmp_path):
    path = write(
        tmp_path / "a.jsonl.gz",
        [
            record("x", "zeta", 1.0, 0.5),
            record("x", "alpha", 0.0, 0.1),
            record("y", "alpha", 1.0, None),  # no cost, no price: NaN
            record("y", "beta", 1.0, 0.2, primitive="cot", response=None),
        ],
    )
    t = load_table([path])
    assert t.item_ids == ["x", "y"]
    assert t.pairs == [("alpha", "direct"), ("beta", "cot"), ("zeta", "direct")]
    assert t.score[0].tolist()[::2] == [0.0, 1.0] and math.isnan(t.score[0, 1])
    assert t.cost[1, 1] == 0.2 and math.isnan(t.cost[1, 0])
    assert t.available().tolist() == [[True, False, True], [False, True, False]]
    assert t.responses[0][2] == "answer of zeta" and t.responses[1][1] is None


def test_load_table_prices_missing_cost_from_tokens(tmp_path):
    path = write(tmp_path / "a.jsonl", [record("x", "alpha", 1.0, None, prompt_tokens=1000, completion_tokens=500)])
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"alpha": {"input_per_mtok": 2.0, "output_per_mtok": 4.0}}))
    t = load_table([path], prices=prices)
    # 1000 * 2 / 1e6 + 500 * 4 / 1e6 = 0.002 + 0.002
    assert t.cost[0, 0] == pytest.approx(0.004)
    assert t.tokens_in[0, 0] == 1000 and t.tokens_out[0, 0] == 500


def test_same_item_id_in_two_sources_is_two_items(tmp_path):
    a = write(tmp_path / "a.jsonl", [record("x", "alpha", 1.0, 0.1)])
    b = write(tmp_path / "b.jsonl", [record("x", "alpha", 0.0, 0.1, source="other")])
    t = load_table([a, b])
    assert t.n_items == 2 and t.keys() == [("synth", "x"), ("other", "x")]


def test_split_of_an_item_is_its_majority(tmp_path):
    records = [record("x", m, 1.0, 0.1, split="train") for m in ("a", "b", "c")]
    records.append(record("x", "d", 1.0, 0.1, split="test"))
    records.append(record("y", "a", 1.0, 0.1, split="test"))
    t = load_table([write(tmp_path / "a.jsonl", records)])
    assert t.splits == ["train", "test"]


def test_rows_and_columns_subset_every_field():
    t = table([[1, 0, 1], [0, 1, 0]], [[1, 2, 3], [4, 5, 6]], responses=[["a", "b", "c"], ["d", "e", "f"]])
    r = t.rows([1])
    assert r.item_ids == ["i1"] and r.score.tolist() == [[0, 1, 0]] and r.responses == [["d", "e", "f"]]
    c = t.columns(np.array([2, 0]))
    assert c.pairs == [("m2", "direct"), ("m0", "direct")]
    assert c.cost.tolist() == [[3, 1], [6, 4]] and c.responses[1] == ["f", "d"]
    assert c.n_items == 2 and c.n_pairs == 2


def test_split_table_upstream_when_every_item_has_a_split(tmp_path):
    records = [record(f"t{k}", "a", 1.0, 0.1, split="train") for k in range(5)]
    records += [record(f"s{k}", "a", 1.0, 0.1, split="test") for k in range(2)]
    t = load_table([write(tmp_path / "a.jsonl", records)])
    train, test = split_table(t, seed=123)
    assert set(train.item_ids) == {f"t{k}" for k in range(5)}
    assert set(test.item_ids) == {"s0", "s1"}


def test_split_table_seeded_80_20_by_item():
    t = table([[1.0]] * 50, [[0.1]] * 50)
    train, test = split_table(t, seed=7)
    again_train, again_test = split_table(t, seed=7)
    other_train, _ = split_table(t, seed=8)
    assert (train.n_items, test.n_items) == (40, 10)
    assert not set(train.item_ids) & set(test.item_ids)
    assert train.item_ids == again_train.item_ids and test.item_ids == again_test.item_ids
    assert train.item_ids != other_train.item_ids


def test_probe_split_reveals_k_complete_items_and_keeps_the_rest():
    score = [[1, 1]] * 6 + [[1, float("nan")]] * 4
    t = table(score, [[0.1, 0.2]] * 10)
    probe, rest = probe_split(t, k=5, seed=0)
    assert probe.n_items == 5 and rest.n_items == 5
    assert not set(probe.item_ids) & set(rest.item_ids)
    assert probe.available().all()  # items where every pair is recorded are drawn first
    assert probe.pairs == t.pairs
    with pytest.raises(ValueError, match="no test items"):
        probe_split(t, k=10, seed=0)
