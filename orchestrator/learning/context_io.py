"""A pool's calibration in a checkpoint: all that the pair features need at run time.

The policy's pair features read calibration statistics (per-domain accuracy and cost, the
per-item accuracy from the nearest calibration items and from a fitted predictor). A
checkpoint carries them whole (`context_payload`), so that a live decision computes its
features exactly as the evaluation does for the same item (`context_from_payload`). Arrays
are torch tensors at their own precision, so the file loads with `weights_only=True`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from orchestrator.learning.calibration import Calibration, ItemPredictor
from orchestrator.learning.dataset import PoolContext
from orchestrator.learning.features import PairInfo

ARRAYS = ("embeddings", "score", "global_acc", "domain_acc", "domain_cost")
PREDICTOR = ("weight", "bias", "pair", "pair_bias")


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array))


def context_payload(context: PoolContext) -> dict[str, Any]:
    calib = context.calibration
    payload: dict[str, Any] = {
        "infos": [asdict(info) for info in context.infos],
        "cost_ref": float(calib.cost_ref),
        "domains": list(calib.domains),
        "blend": float(calib.blend),
        **{name: _tensor(getattr(calib, name)) for name in ARRAYS},
        "oof": None if calib.oof is None else _tensor(calib.oof),
        "predictor": None,
    }
    if calib.predictor is not None:
        payload["predictor"] = {name: _tensor(getattr(calib.predictor, name)) for name in PREDICTOR}
    return payload


def context_from_payload(payload: Mapping[str, Any]) -> PoolContext:
    predictor = payload.get("predictor")
    calibration = Calibration(
        **{name: payload[name].numpy() for name in ARRAYS},
        cost_ref=float(payload["cost_ref"]),
        domains=tuple(payload.get("domains", ())),
        predictor=ItemPredictor(**{name: predictor[name].numpy() for name in PREDICTOR}) if predictor else None,
        oof=payload["oof"].numpy() if payload.get("oof") is not None else None,
        blend=float(payload.get("blend", 0.0)),
    )
    return PoolContext(infos=[PairInfo(**info) for info in payload["infos"]], calibration=calibration)
