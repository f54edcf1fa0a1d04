from pathlib import Path

from workers.importers import bbh


def test_direct_and_cot_scored_by_exact_match(shared: Path) -> None:
    records = list(bbh.records(shared / "primitives" / "bbh"))

    assert [(r.item_id, r.primitive, r.score) for r in records] == [
        ("bbh.toy_logic.0", "direct", 1.0),
        ("bbh.toy_logic.1", "direct", 0.0),
        ("bbh.toy_logic.0", "cot", 1.0),
        ("bbh.toy_logic.1", "cot", 1.0),
    ]
    first = records[0]
    assert first.prompt.endswith("Q: not ( True ) and False is\nA:")
    assert (first.gold, first.response, first.model) == ("False", " False.", "code-davinci-002")
    assert (first.benchmark, first.domain, first.cost_usd) == ("bbh/toy_logic", "reasoning", None)


def test_extract_answer() -> None:
    assert bbh.extract_answer(" (B).", "direct") == "(B)"
    assert bbh.extract_answer("So the answer is No. Wait. So the answer is (A).", "cot") == "(A)"
    assert bbh.extract_answer("no cue here", "cot") == "no cue here"
