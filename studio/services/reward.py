"""The default reward model (OrchRM): its file, and a scorer of plans for the labeling queue.

The default is the `reward_model` Checkpoint marked default (the first one trained, or the
one promoted). Its file is relative to DATA_DIR. The loaded model is kept in-process per
(file, mtime) by `orchestrator.policies.best_of.load_reward_model`, so a promoted or
retrained model is picked up without a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
from django.conf import settings

from orchestrator.reward.plans import Plan
from studio.errors import Invalid
from studio.models import Checkpoint, CheckpointKind

log = logging.getLogger(__name__)

PlanScorer = Callable[[list[str], list[Plan]], np.ndarray]


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
            "(on the Training page, kind Reward model: the first one becomes the default; or "
            "POST /api/training/jobs with kind reward_model), or use best_of 1.",
        )


def default_scorer() -> PlanScorer | None:
    """`(task texts, plans) -> rewards [m]` by the default reward model; None when there is none."""
    from orchestrator.embedding import embed
    from orchestrator.policies.best_of import load_reward_model  # torch: loaded on first use only

    path = reward_model_file()
    return load_reward_model(str(path)).scorer(embed) if path is not None else None
