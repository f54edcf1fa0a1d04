"""The default reward model (OrchRM): its file, and a scorer of plans for the labeling queue.

The default is the `reward_model` Checkpoint marked default (the first one trained, or the
one promoted). Its file is relative to DATA_DIR. The loaded model is kept in-process per
(checkpoint id, file mtime), so a promoted or retrained model is picked up without a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings

from orchestrator.reward.plans import Plan
from studio.errors import Invalid
from studio.models import Checkpoint, CheckpointKind

if TYPE_CHECKING:
    from orchestrator.reward.model import RewardModel

log = logging.getLogger(__name__)

PlanScorer = Callable[[list[str], list[Plan]], np.ndarray]

_models: dict[tuple[int, float], RewardModel] = {}
_lock = threading.Lock()


def default_reward_checkpoint() -> Checkpoint | None:
    return Checkpoint.objects.filter(kind=CheckpointKind.REWARD_MODEL, is_default=True).first()


def reward_model_file() -> Path | None:
    """The default reward model's file; None when there is none or its file is missing (logged)."""
    checkpoint = default_reward_checkpoint()
    if checkpoint is None:
        return None
    path = Path(settings.DATA_DIR) / checkpoint.path
    if not path.is_file():
        log.warning("the default reward model %s has no file at %s", checkpoint.name, path)
        return None
    return path


def check_best_of(*, best_of: int) -> None:
    """Best-of-N needs a reward model to choose among the N candidates."""
    if best_of > 1 and reward_model_file() is None:
        raise Invalid(
            "best_of",
            "best_of needs a default reward model; train and promote one "
            "(POST /api/training/jobs with kind reward_model), or use best_of 1.",
        )


def default_scorer() -> PlanScorer | None:
    """`(task texts, plans) -> rewards [m]` by the default reward model; None when there is none."""
    from orchestrator.embedding import embed
    from orchestrator.reward.model import RewardModel  # torch: loaded on first use only

    checkpoint = default_reward_checkpoint()
    if checkpoint is None:
        return None
    path = Path(settings.DATA_DIR) / checkpoint.path
    try:
        key = (checkpoint.pk, path.stat().st_mtime)
    except OSError:
        log.warning("the default reward model %s has no file at %s", checkpoint.name, path)
        return None
    with _lock:
        model = _models.get(key)
        if model is None:
            model = RewardModel.load(path)
            _models.clear()  # only the current default is worth keeping
            _models[key] = model
    return model.scorer(embed)
