"""No test item's text is seen in training: every split the evaluations make, on the shipped tables.

The shipped tables repeat prompts (LLMRouter's test split has 119 prompts of its train
split, RouterBench's 2, and 104 of LLMRouter's are RouterBench's), so each test first shows
that the raw split leaks, then that the split the project makes does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.composite.build import build_split
from orchestrator.offline.items import ItemsConfig, split_setting
from orchestrator.offline.pools import OUTCOMES, draw_splits, nested_probes, split_tables
from orchestrator.routing.clean import leaked, normalized, texts_of, without_seen
from orchestrator.routing.table import OutcomeTable, load_table, probe_split, split_table
from tests.orchestrator.synthetic import table

ROOT = Path(__file__).resolve().parents[2]
ROUTERBENCH, LLMROUTER = (str(path) for path in OUTCOMES)


@pytest.fixture(scope="module")
def shipped() -> dict[str, OutcomeTable]:
    return {"routerbench": load_table([ROUTERBENCH]), "llmrouter": load_table([LLMROUTER])}


def test_normalized_text_ignores_case_width_and_white_space() -> None:
    assert normalized("  What is\t6 *  7?\n") == normalized("what is 6 * 7?") == "what is 6 * 7?"
    assert normalized("ＡＢＣ") == "abc"  # NFKC: full-width letters
    assert normalized("6 * 7") != normalized("6*7")  # only white space runs are merged


def test_a_test_item_whose_text_is_a_train_items_leaves_the_test() -> None:
    train = table([[1.0]] * 2, [[0.1]] * 2, prompts=["What is 2+2?", "Name a colour."])
    test = table([[0.0]] * 3, [[0.1]] * 3, prompts=["what is  2+2?", "Name a fruit.", "NAME A COLOUR."])
    assert leaked(test, train) == ["i0", "i2"]
    assert without_seen(test, train).prompts == ["Name a fruit."]
    assert without_seen(test).n_items == 3


@pytest.mark.parametrize("source", ["routerbench", "llmrouter"])
def test_the_upstream_split_is_clean(shipped: dict[str, OutcomeTable], source: str) -> None:
    t = shipped[source]
    raw_train = t.rows([i for i, s in enumerate(t.splits) if s == "train"])
    raw_test = t.rows([i for i, s in enumerate(t.splits) if s == "test"])
    assert leaked(raw_test, raw_train)  # the upstream files leak
    train, test = split_table(t, seed=0)
    assert train.item_ids == raw_train.item_ids
    assert leaked(test, train) == []
    assert test.n_items == raw_test.n_items - len(leaked(raw_test, raw_train))


def test_a_pool_from_another_source_is_clean_of_train_and_probe() -> None:
    config = ItemsConfig(outcomes=(Path(LLMROUTER),), train=(Path(ROUTERBENCH),), probe=50, seed=0)
    setting = split_setting(config, None)
    assert setting.probe is not None
    assert leaked(setting.test, setting.train, setting.probe) == []
    assert len(leaked(load_table([LLMROUTER]), setting.train)) > 0  # across sources, by text


def test_probe_items_count_as_train() -> None:
    prompts = ["same question"] * 4 + [f"question {k}" for k in range(6)]
    t = table([[1.0, 1.0]] * 10, [[0.1, 0.2]] * 10, prompts=prompts)
    probe, rest = probe_split(t, k=3, seed=0)
    assert leaked(rest, probe) == []
    assert probe.n_items + rest.n_items <= t.n_items


def test_every_unseen_pool_split_of_the_protocol_is_clean() -> None:
    both = load_table([ROUTERBENCH, LLMROUTER])
    splits = draw_splits(both, 5)
    assert len(splits) == 12  # the protocol: 5 models splits per source and 2 source splits
    for split in splits:
        train, test = split_tables(both, split)
        probes, rest = nested_probes(test, (10, 25, 50, 100), seed=0)
        assert leaked(test, train) == [], split.name
        assert leaked(rest, train, probes[100]) == [], split.name


def test_composites_draw_their_test_parts_from_clean_items(shipped: dict[str, OutcomeTable]) -> None:
    t = shipped["llmrouter"]
    train, test = build_split(t, train_count=200, test_count=200, seed=0)
    seen = texts_of([t.rows([i for i, s in enumerate(t.splits) if s == "train"])])
    test_texts = {normalized(t.prompts[leaf]) for c in test for leaf in c.leaves()}
    assert test_texts and not test_texts & seen
    assert train
