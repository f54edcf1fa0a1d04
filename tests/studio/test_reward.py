"""The default reward model: its scorer for the labeling queue, and the best_of check."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from orchestrator import filecache
from orchestrator.reward.model import RewardModel
from orchestrator.reward.plans import Plan
from studio.errors import Invalid
from studio.models import Checkpoint, CheckpointKind
from studio.selectors.preferences import labeling_queue
from studio.services.policies import policy_config
from studio.services.reward import check_best_of, default_scorer, reward_model_file
from tests.factories import UserFactory
from tests.support.preferences import make_pair
from tests.support.reward import tiny_reward_model

pytestmark = pytest.mark.django_db


def fake_embed(texts: list[str]) -> np.ndarray:
    emb = np.random.default_rng(len(texts)).normal(size=(len(texts), 384)).astype(np.float32)
    return emb / np.linalg.norm(emb, axis=1, keepdims=True)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr("orchestrator.embedding.embed", fake_embed)
    with override_settings(DATA_DIR=tmp_path):
        yield tmp_path


def default_rm(data_dir: Path, name: str = "rm-1") -> Checkpoint:
    tiny_reward_model(data_dir / "checkpoints" / f"{name}.pt")
    Checkpoint.objects.filter(kind=CheckpointKind.REWARD_MODEL).update(is_default=False)
    return Checkpoint.objects.create(
        kind=CheckpointKind.REWARD_MODEL, name=name, path=f"checkpoints/{name}.pt", is_default=True
    )


def test_no_default_reward_model_means_no_scorer(data_dir: Path) -> None:
    Checkpoint.objects.create(kind=CheckpointKind.REWARD_MODEL, name="not-default", path="checkpoints/x.pt")
    assert default_scorer() is None
    assert reward_model_file() is None


def test_a_missing_file_means_no_scorer_and_a_warning(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    Checkpoint.objects.create(
        kind=CheckpointKind.REWARD_MODEL, name="gone", path="checkpoints/gone.pt", is_default=True
    )
    with caplog.at_level(logging.WARNING, logger="studio.services.reward"):
        assert default_scorer() is None
    assert "has no file" in caplog.text


def test_the_scorer_scores_plans_and_is_loaded_once_per_file_version(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    load = RewardModel.load.__func__  # type: ignore[attr-defined]

    def counted(cls: type[RewardModel], path: Path) -> RewardModel:
        loads.append(Path(path).name)
        return load(cls, path)

    monkeypatch.setattr(RewardModel, "load", classmethod(counted))
    filecache.forget()
    default_rm(data_dir)
    scorer = default_scorer()
    assert scorer is not None
    plans = [Plan.single("gpt-4", "direct"), Plan.single("mistral-7b-chat", "direct")]
    scores = scorer(["question 1", "question 1"], plans)
    assert scores.shape == (2,) and np.isfinite(scores).all()
    default_scorer()
    assert loads == ["rm-1.pt"]
    default_rm(data_dir, "rm-2")  # promoted: the next scorer is the new model's
    default_scorer()
    assert loads == ["rm-1.pt", "rm-2.pt"]


def test_the_labeling_queue_orders_by_the_default_reward_model(data_dir: Path) -> None:
    default_rm(data_dir)
    make_pair(model_a="gpt-4", model_b="mistral-7b-chat")
    items = labeling_queue(user=UserFactory(role="labeler"))
    assert len(items) == 1 and items[0].margin is not None


def test_best_of_needs_a_default_reward_model(data_dir: Path) -> None:
    check_best_of(best_of=1)
    with pytest.raises(Invalid, match="best_of needs a default reward model") as error:
        check_best_of(best_of=2)
    assert error.value.extra == {"field": "best_of"}
    checkpoint = default_rm(data_dir)
    check_best_of(best_of=16)
    path = str(data_dir / checkpoint.path)
    assert policy_config({}, None, best_of=4) == {"reward_model": path}
    assert policy_config({}, None, best_of=1) == {}
