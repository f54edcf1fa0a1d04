"""The converted files committed under data/outcomes read cleanly and hold the expected counts."""

import json
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.outcomes import read_outcomes
from workers.importers import SOURCES

OUTCOMES = Path(__file__).resolve().parents[3] / "data" / "outcomes"
MAX_BYTES = 20 * 1024 * 1024


@pytest.mark.parametrize("source", list(SOURCES))
def test_every_shipped_file_reads_cleanly(source: str) -> None:
    path = OUTCOMES / f"{source}.jsonl.gz"

    records = list(read_outcomes(path))

    assert records and path.stat().st_size < MAX_BYTES
    assert {r.source for r in records} == {source}
    keys = Counter((r.item_id, r.model, r.primitive) for r in records)
    assert keys.most_common(1)[0][1] == 1
    assert (OUTCOMES / "licenses" / f"{source}.LICENSE").exists()


@pytest.mark.parametrize(
    ("source", "records", "items", "models"),
    [
        # 3,178 CSV rows x 11 models, less 154 empty score cells; 14 ARC samples are split over two rows.
        ("routerbench", 34_804, 3_164, 11),
        ("llmrouter", 6_108 * 9, 6_108, 9),
    ],
)
def test_expected_counts(source: str, records: int, items: int, models: int) -> None:
    loaded = list(read_outcomes(OUTCOMES / f"{source}.jsonl.gz"))

    assert len(loaded) == records
    assert len({r.item_id for r in loaded}) == items
    assert len({r.model for r in loaded}) == models


def test_prices_are_a_price_table() -> None:
    prices = json.loads((OUTCOMES / "prices.json").read_text())

    assert prices
    for entry in prices.values():
        assert set(entry) == {"input_per_mtok", "output_per_mtok"}
        assert all(isinstance(value, int | float) and value >= 0 for value in entry.values())


def test_the_local_models_outcomes_are_its_scored_answers() -> None:
    """data/outcomes/smollm2.jsonl.gz: real calls of the local model (bench/local_loop.py --ship),
    each answer scored by the arithmetic checker as the collection scored it."""
    from providers.checkers import check

    records = list(read_outcomes(OUTCOMES / "smollm2.jsonl.gz"))

    assert {r.source for r in records} == {"smollm2"} and {r.model for r in records} == {"openai/smollm2"}
    assert {r.primitive for r in records} == {"direct", "cot", "self_consistency"}
    assert {(r.benchmark, r.domain, r.split) for r in records} == {("arithmetic", "math", "train")}
    assert Counter((r.item_id, r.primitive) for r in records).most_common(1)[0][1] == 1
    for r in records:
        assert r.gold is not None
        assert r.score == (check("arithmetic", r.response, r.gold).score if r.response is not None else 0.0), r
        assert r.latency_s and r.latency_s > 0 and r.cost_usd is not None  # a real call, timed and priced
    assert (OUTCOMES / "licenses" / "smollm2.LICENSE").exists()
