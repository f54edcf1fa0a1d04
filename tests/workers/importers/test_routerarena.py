from pathlib import Path

import pytest

from workers.importers import routerarena
from workers.importers.common import ImportLog


def test_uses_recorded_tokens_and_cost_and_skips_out_of_range_scores(shared: Path) -> None:
    log = ImportLog()
    records = list(routerarena.records(shared / "routerarena", log=log))

    assert [(r.item_id, r.benchmark, r.domain, r.score) for r in records] == [
        ("MMLUPro_math_3", "MMLUPro_math", "math", 1.0),
        ("SuperGLUE-Wic_12", "SuperGLUE-Wic", "reasoning", 1.0),
    ]
    assert log.skipped == {"score outside [0, 1]": 1}
    first = records[0]
    assert (first.prompt_tokens, first.completion_tokens, first.cost_usd) == (20, 2, 0.0000123)
    assert (first.model, first.response, first.gold, first.split) == ("model-x", "42", "42", None)


def test_cost_json_is_a_price_table(shared: Path) -> None:
    assert routerarena.prices(shared / "routerarena")["model-x"] == {
        "input_per_mtok": 0.5,
        "output_per_mtok": 1.5,
    }


def test_an_unknown_benchmark_family_is_an_error() -> None:
    with pytest.raises(ValueError, match="no domain"):
        routerarena.domain_of("BrandNewBench_x")
