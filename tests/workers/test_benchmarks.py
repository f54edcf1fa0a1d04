"""The vendored benchmark items load, with the counts PROVENANCE.md states."""

from __future__ import annotations

import pytest

from workers.benchmarks import DATA_DIR, load, names

COUNTS = {
    "gsm8k": 1319,
    "gsm8k_train": 7473,
    "humaneval": 164,
    "mbpp": 397,
    "math500": 500,
    "hotpotqa": 7405,
    "bfcl": 1000,
    "bfcl_simple_python": 400,
    "bfcl_multiple": 200,
    "bfcl_parallel": 200,
    "bfcl_parallel_multiple": 200,
}


def test_every_name_has_an_expected_count() -> None:
    assert sorted(COUNTS) == names()


@pytest.mark.parametrize(("name", "count"), sorted(COUNTS.items()))
def test_each_benchmark_loads_with_unique_ids(name: str, count: int) -> None:
    items = load(name)

    assert len(items) == count
    assert len({item["id"] for item in items}) == count


def test_items_keep_their_upstream_fields() -> None:
    assert load("gsm8k")[0]["answer"].endswith("#### 18")
    assert {"prompt", "entry_point", "test", "canonical_solution"} <= set(load("humaneval")[0])
    assert {"prompt", "entry_point", "test"} <= set(load("mbpp")[0])
    assert {"problem", "solution", "answer", "level"} <= set(load("math500")[0])
    assert load("hotpotqa")[0] == {
        "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
        "answer": "yes",
        "type": "comparison",
        "id": "hotpotqa/dev/0",
    }


def test_bfcl_items_carry_their_gold_calls() -> None:
    item = load("bfcl_parallel")[0]

    assert item["category"] == "parallel"
    assert item["possible_answer"][0] == {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}}
    assert item["function"][0]["name"] == "spotify.play"


def test_each_folder_keeps_its_licence() -> None:
    for folder in ("gsm8k", "humaneval", "mbpp", "math500", "hotpotqa", "bfcl"):
        assert (DATA_DIR / folder / "LICENSE").is_file(), folder
    assert (DATA_DIR / "PROVENANCE.md").is_file()


def test_unknown_benchmark_is_a_clear_key_error() -> None:
    with pytest.raises(KeyError, match="Unknown benchmark 'chess'"):
        load("chess")
