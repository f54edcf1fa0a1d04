"""Human labels in OrchRM's training: their weight, the held-out agreement, the datasets format."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from orchestrator.evaluate_human_weight import inverted_labels
from orchestrator.reward.hf import read_dataset, write_dataset
from orchestrator.reward.jsonl import PreferenceFormatError, PreferenceRecord, record_to_json
from orchestrator.reward.plans import Plan
from orchestrator.reward.train import bt_loss
from orchestrator.train_rm import RMConfig, human_holdout, train
from tests.orchestrator.synthetic import write
from tests.orchestrator.synthetic_outcomes import lookup_embedder, outcome_records, synthetic_table


def test_the_weight_scales_each_pairs_term() -> None:
    win, lose = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    plain = bt_loss(win, lose)
    assert bt_loss(win, lose, weight=torch.ones(2)) == pytest.approx(float(plain))
    heavy = bt_loss(win, lose, weight=torch.tensor([1.0, 10.0]))
    assert float(heavy) > float(plain) * 4  # the wrong-way pair dominates


def labels(n: int) -> list[PreferenceRecord]:
    return [PreferenceRecord(prompt=f"p{k}", chosen="a", rejected="b", source="human",
                             chosen_plan=Plan.single("m1", "direct"), rejected_plan=Plan.single("m2", "direct"))
            for k in range(n)]  # fmt: skip


def test_the_holdout_is_a_share_of_the_human_pairs_the_same_in_any_order() -> None:
    records = [*labels(10), PreferenceRecord(prompt="x", chosen="a", rejected="b", source="cheaper_correct")]
    kept, held = human_holdout(records, 0.3)
    assert len(held) == 3 and all(r.source == "human" for r in held) and len(kept) == 8
    _, again = human_holdout(list(reversed(records)), 0.3)
    assert {r.prompt for r in again} == {r.prompt for r in held}
    assert human_holdout(records, 0.0)[1] == []
    assert len(human_holdout(labels(1), 0.9)[1]) == 0  # one pair trains, always


def test_the_weight_moves_orchrm_toward_the_labels_and_the_held_out_ones_are_scored(tmp_path: Path) -> None:
    """Labels that invert correct-over-incorrect on the synthetic table: with weight 0 OrchRM
    follows the records on them, with a large weight the people. (Whether that carries to the
    held-out labels depends on the data: `evaluate_human_weight` measures it on RouterBench.)"""
    table, emb = synthetic_table(n=160, seed=0)
    outcomes = write(tmp_path / "synthetic.jsonl.gz", outcome_records(table))
    fixture = inverted_labels(table, benchmark="synthetic", right="gpt-4", wrong="mistral-7b-chat", count=40)
    assert all(r.chosen_plan == Plan.single("mistral-7b-chat", "direct") for r in fixture)
    fitted = {}
    for weight in (0.0, 200.0):
        config = RMConfig.from_mapping({"train": {"epochs": 10, "batch_size": 16, "threads": 1, "lr": 3e-3,
                                                  "human_weight": weight, "human_holdout": 0.5},
                                        "model": {"hidden": 16}})  # fmt: skip
        metrics = train([outcomes], out=tmp_path / "rm.pt", seed=0, config=config, prices=None, preferences=fixture,
                        embedder=lookup_embedder(table, emb), show_progress=False)  # fmt: skip
        assert metrics["human_heldout/pairs"] == 20 and 0 <= metrics["human_heldout/agreement"] <= 1
        assert metrics["train/pairs/human"] == 20  # the other half trains
        fitted[weight] = metrics["train/accuracy/human"]
    assert fitted[0.0] < 0.5 and fitted[200.0] == 1.0, fitted


def test_too_few_items_for_the_fixture_is_named() -> None:
    table, _ = synthetic_table(n=20, seed=0)
    with pytest.raises(ValueError, match="items have gpt-4 right and mistral-7b-chat wrong"):
        inverted_labels(table, benchmark="synthetic", right="gpt-4", wrong="mistral-7b-chat", count=400)
    with pytest.raises(ValueError, match="model 'nope' is not recorded"):
        inverted_labels(table, benchmark="synthetic", right="nope", wrong="gpt-4", count=1)


def test_a_datasets_directory_round_trips_the_records(tmp_path: Path) -> None:
    records = [*labels(3), PreferenceRecord(prompt="q", chosen="c", rejected="r", source="imported",
                                            extra={"pair_id": 4, "domain": "math"})]  # fmt: skip
    assert write_dataset(tmp_path / "ds", records) == 4
    back = read_dataset(tmp_path / "ds")
    assert [record_to_json(r) for r in back] == [record_to_json(r) for r in records]
    from datasets import load_from_disk

    assert load_from_disk(str(tmp_path / "ds")).column_names[:3] == ["prompt", "chosen", "rejected"]  # what TRL reads
    with pytest.raises(PreferenceFormatError, match="is not a saved dataset directory"):
        read_dataset(tmp_path)
