from pathlib import Path

import pytest

from workers.importers import routerbench
from workers.importers.common import ImportLog


def test_maps_cells_to_records_and_skips_empty_scores(shared: Path) -> None:
    log = ImportLog()
    records = list(routerbench.records(shared / "routerbench", log=log))

    assert [(r.item_id, r.model, r.split, r.score) for r in records] == [
        ("mbpp.dev.3", "alpha-1", "test", 0.0),
        ("mbpp.dev.3", "org/beta-2", "test", 1.0),
        ("arc-challenge.val.1", "alpha-1", "train", 1.0),
        ("arc-challenge.val.1", "org/beta-2", "train", 0.0),
        ("winogrande.train.7", "org/beta-2", "train", 1.0),
    ]
    assert log.skipped == {"empty score cell": 1}
    arc = records[2]
    assert arc.prompt == "Which is a mammal?\nA) trout\nB) whale\nAnswer:"
    assert (arc.response, arc.cost_usd, arc.domain, arc.benchmark) == (
        "B",
        0.0005,
        "reasoning",
        "arc-challenge",
    )
    assert (arc.primitive, arc.gold, arc.prompt_tokens, arc.latency_s) == ("direct", None, None, None)
    assert records[3].response == "A\n"
    assert records[1].response == "def add(a, b):\n    return a + b"


def test_a_prompt_stored_twice_is_one_text(shared: Path) -> None:
    log = ImportLog()
    mbpp = next(iter(routerbench.records(shared / "routerbench", log=log)))

    assert (mbpp.prompt, mbpp.domain) == ("Write a function add(a, b).", "code")
    assert log.notes["repeated text collapsed to one"] == 1


def test_a_list_of_different_texts_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 different texts"):
        routerbench.decode_text("['one', 'two']", what="x", log=ImportLog())
