from pathlib import Path

import pytest

from orchestrator.outcomes import estimate_tokens
from workers.importers import llmrouter
from workers.importers.common import ImportLog


def test_joins_task_and_gold_and_assumes_the_completion_length(shared: Path) -> None:
    records = list(llmrouter.records(shared / "llmrouter", assume_completion_tokens=100))

    assert [(r.item_id, r.split, r.model, r.score) for r in records] == [
        ("train.0", "train", "small-7b", 1.0),
        ("train.0", "train", "big-70b", 1.0),
        ("train.1", "train", "small-7b", 0.0),
        ("train.1", "train", "big-70b", 1.0),
        ("test.0", "test", "small-7b", 0.4),
        ("test.0", "test", "big-70b", 0.75),
        ("test.1", "test", "small-7b", 0.0),
        ("test.1", "test", "big-70b", 1.0),
    ]
    small = records[0]
    assert (small.benchmark, small.domain, small.gold) == ("gsm8k", "math", "12 * 3 = 36\n#### 36")
    assert small.prompt_tokens == estimate_tokens("What is 12 times 3?") == 5
    assert small.completion_tokens == 100
    assert small.cost_usd == pytest.approx((5 * 0.2 + 100 * 0.4) / 1e6)
    assert (small.response, small.latency_s) == (None, None)
    assert records[5].cost_usd == pytest.approx((estimate_tokens(records[5].prompt) + 100) * 0.9 / 1e6)


def test_default_completion_length_is_256(shared: Path) -> None:
    record = next(iter(llmrouter.records(shared / "llmrouter")))

    assert record.completion_tokens == llmrouter.DEFAULT_COMPLETION_TOKENS == 256


def test_ambiguous_join_keeps_the_first_task_without_gold(shared: Path) -> None:
    log = ImportLog()
    records = list(llmrouter.records(shared / "llmrouter", log=log))

    plants = records[2]
    assert (plants.benchmark, plants.domain, plants.gold) == ("mmlu", "knowledge", None)
    assert log.notes["ambiguous ground truth (gold left null)"] == 1
    assert log.notes["question in both train and test (kept in each)"] == 1


def test_negative_completion_length_is_refused(shared: Path) -> None:
    with pytest.raises(ValueError, match="assume_completion_tokens"):
        list(llmrouter.records(shared / "llmrouter", assume_completion_tokens=-1))
