from pathlib import Path

import pytest

from orchestrator.outcomes import estimate_tokens
from workers.importers import reflexion
from workers.importers.common import ImportLog

PRICES = {"gpt-4": {"input_per_mtok": 10.0, "output_per_mtok": 30.0}}


def test_runs_map_to_model_and_primitive(shared: Path) -> None:
    log = ImportLog()
    records = list(reflexion.records(shared / "primitives" / "reflexion", prices=PRICES, log=log))

    assert [(r.item_id, r.model, r.primitive, r.score) for r in records] == [
        ("HumanEval/0", "gpt-4", "direct", 1.0),
        ("HumanEval/0", "gpt-3.5-turbo", "direct", 0.0),
        ("HumanEval/0", "gpt-4", "reflexion", 1.0),
        ("mbpp_7_double", "gpt-4", "direct", 0.0),
        ("mbpp_7_double", "gpt-4", "reflexion", 1.0),
    ]
    assert log.skipped == {
        "rows of duplicate runs": 1,
        "rows of unlisted run runs/some_other_run/other.jsonl": 2,
    }
    assert log.notes["empty solution kept (response null)"] == 1


def test_costs_only_where_a_single_call_was_recorded_and_priced(shared: Path) -> None:
    records = list(reflexion.records(shared / "primitives" / "reflexion", prices=PRICES))

    direct, unpriced, repaired = records[0], records[1], records[2]
    assert direct.prompt_tokens == estimate_tokens(direct.prompt)
    assert direct.cost_usd == pytest.approx(
        (estimate_tokens(direct.prompt) * 10 + estimate_tokens(direct.response) * 30) / 1e6
    )
    assert (unpriced.response, unpriced.cost_usd) == (None, None)
    assert (repaired.prompt_tokens, repaired.cost_usd) == (None, None)
    assert direct.gold == "def check(candidate):\n    assert candidate(1) == 2\n"
    assert (direct.domain, direct.benchmark, direct.split) == ("code", "humaneval", None)
