from pathlib import Path

import pytest

from orchestrator.outcomes import estimate_tokens
from workers.importers import routellm
from workers.importers.common import ImportLog

PRICES = {"gpt-4-1106-preview": {"input_per_mtok": 10.0, "output_per_mtok": 30.0}}


def test_gsm8k_rows_with_gold_and_estimated_cost(shared: Path) -> None:
    records = list(
        routellm.records(shared / "routellm", prices=PRICES, gsm8k_test=shared / "benchmarks" / "gsm8k" / "test.jsonl")
    )
    gsm8k = [r for r in records if r.benchmark == "gsm8k"]

    assert [(r.item_id, r.model, r.score, r.gold) for r in gsm8k] == [
        ("gsm8k.test.0", "acme/Open-8x7B", 1.0, "7"),
        ("gsm8k.test.0", "gpt-4-1106-preview", 1.0, "7"),
        ("gsm8k.test.1", "acme/Open-8x7B", 0.0, "14"),
        ("gsm8k.test.1", "gpt-4-1106-preview", 1.0, "14"),
    ]
    open_model, gpt4 = gsm8k[0], gsm8k[1]
    assert open_model.response == " Tom has 3 + 4 = 7 apples.\n#### 7"
    assert (open_model.prompt_tokens, open_model.cost_usd) == (None, None)  # no price for this model
    assert gpt4.completion_tokens == estimate_tokens("He has 7 apples.") == 4
    assert gpt4.cost_usd == pytest.approx((estimate_tokens(gpt4.prompt) * 10 + 4 * 30) / 1e6)


def test_gold_is_null_without_the_gsm8k_file(shared: Path) -> None:
    record = next(iter(routellm.records(shared / "routellm")))

    assert (record.gold, record.cost_usd) == (None, None)


def test_mt_bench_turns_are_cut_from_the_judge_prompt(shared: Path) -> None:
    log = ImportLog()
    records = [r for r in routellm.records(shared / "routellm", log=log) if r.benchmark == "mt-bench"]

    assert [(r.item_id, r.model, r.score, r.gold) for r in records] == [
        ("mt-bench.81.turn1", "router-a", 0.8, None),
        ("mt-bench.111.turn1", "router-a", 1.0, "4"),
        ("mt-bench.111.turn2", "router-a", 0.9, "12"),
        ("mt-bench.81.turn2", "router-b", 0.85, None),
    ]
    assert log.skipped == {"MT-Bench rating -1 (judge gave none)": 1}
    haiku = records[0]
    assert haiku.prompt == "Write a haiku about rain."
    assert haiku.response == "Soft rain on the roof\nwhispers to the sleeping town\npuddles hold the sky"
    assert (haiku.domain, haiku.split, haiku.cost_usd) == ("chat", None, None)
    second = records[2]
    assert second.prompt == "### User:\nWhat is 2 + 2?\n\n### Assistant A:\n2 + 2 = 4.\n\n### User:\nAnd times 3?"
    assert second.response == "4 times 3 is 12."
