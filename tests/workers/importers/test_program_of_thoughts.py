import json
from pathlib import Path

from orchestrator.outcomes import OutcomeRecord
from workers.importers import program_of_thoughts as pot
from workers.importers.common import ImportLog

PRICES = {"gpt-4": {"input_per_mtok": 10.0, "output_per_mtok": 30.0}}


def _records(shared: Path, log: ImportLog | None = None) -> list[OutcomeRecord]:
    return list(pot.records(shared / "primitives" / "program-of-thoughts", prices=PRICES, log=log))


def test_runs_are_joined_to_items_and_scored_like_upstream(shared: Path) -> None:
    log = ImportLog()
    records = _records(shared, log)

    assert [(r.item_id, r.model, r.primitive, r.score) for r in records] == [
        ("gsm8k.test.0", "code-davinci-002", "program", 1.0),
        ("gsm8k.test.1", "code-davinci-002", "program", 1.0),  # 12.000001 rounds to 12.0
        ("gsm8k.test.1", "code-davinci-002", "program_zero_shot", 0.0),
        ("svamp.chal-1", "code-davinci-002", "program_zero_shot", 1.0),
        ("multiarith.10", "code-davinci-002", "program_zero_shot", 1.0),
        ("multiarith.11", "code-davinci-002", "program_zero_shot", 0.0),
        ("aqua.test.0", "code-davinci-002", "self_consistency", 1.0),
        ("aqua.test.0", "gpt-4", "direct", 0.0),
    ]
    assert log.skipped == {"rows of unlisted run tabmwp_s0_e-1_11_06_22_55.jsonl": 1}
    assert log.notes["run file missing: outputs/aqua_s0_e-1_11_06_18_38.jsonl"] == 1


def test_prompts_and_responses(shared: Path) -> None:
    by_key = {(r.item_id, r.primitive): r for r in _records(shared)}

    few_shot = by_key["gsm8k.test.0", "program"]
    assert few_shot.prompt.endswith(
        "ans = 1 + 1\n\nQuestion: Sam has 5 pens and loses 2. How many are left?\n# Python code, return ans\n"
    )
    assert (few_shot.response, few_shot.gold, few_shot.domain) == ("pens = 5\nans = pens - 2", "3.0", "math")
    zero_shot = by_key["gsm8k.test.1", "program_zero_shot"]
    assert zero_shot.prompt.endswith("    # Firstly, we need define the following variable:\n")
    assert zero_shot.response == "    eggs = 4 * 3\n    return egg\n"
    voted = by_key["aqua.test.0", "self_consistency"]
    assert voted.prompt.endswith("\n# Question: What is 10% of 50?\n# Answer option: ['A)5', 'B)10']")
    assert json.loads(voted.response or "") == ["ans = 0.1 * 50", "ans = 50 / 10"]
    assert voted.cost_usd is None
    chat = by_key["aqua.test.0", "direct"]
    assert chat.prompt == "# Question: What is 10% of 50?\n# Answer option: ['A)5', 'B)10']\n"
    assert (chat.gold, chat.cost_usd is not None) == ("A", True)


def test_numbers_match() -> None:
    assert pot.numbers_match(3.0, 3.0)
    assert pot.numbers_match(0.3333333, 0.33)
    assert not pot.numbers_match(3.1, 3.0)
    assert not pot.numbers_match(None, 3.0)
    assert not pot.numbers_match("3.0", 3.0)
    assert pot.numbers_match(True, "yes")
