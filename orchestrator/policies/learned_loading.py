"""The learned policy's checkpoint as a run loads it: the policy's config (`LearnedPolicyConfig`,
from a run's `policy_config`), and the checkpoint ready to decide (`LoadedPolicy`: its network,
the calibration of the pool it was trained on, its episode length and cascade gates)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.embedding import EMBEDDING_DIM
from orchestrator.learning.calibration import Calibration
from orchestrator.learning.cascade import gates_from_payload
from orchestrator.learning.context_io import context_from_payload
from orchestrator.learning.dataset import PoolContext
from orchestrator.learning.features import pair_infos
from orchestrator.learning.model import PolicyNet, load_checkpoint
from orchestrator.learning.sft import SFTConfig
from orchestrator.policies import COST_PRESETS
from orchestrator.policies.learned_cascade import Gate, parse_gate

PRESETS = COST_PRESETS  # λ in units of the pool's most expensive pair


@dataclass(frozen=True)
class LearnedPolicyConfig:
    """How the learned policy is loaded and which trade-off it serves by default."""

    checkpoint: str  # path of a train_policy checkpoint
    cost_preference: float  # λ when the request carries none
    retries: int = 1  # same-pair retries of a transient failure
    reward_model: str | None = None  # OrchRM checkpoint that picks among best-of-N candidates
    # How much best-of-N over composite plans weighs a plan's estimated cost (None: the run's λ).
    best_of_cost: float | None = None
    # Review answers by the agreement cascade: a gate (benchmark -> (second opinion, escalation)),
    # or True for the checkpoint's own gate at the nearest λ it was fit at (its presets').
    cascade: Gate | bool | None = None
    # The pool's probe outcomes (records, checked when first used): calibrate on them instead
    # of on the checkpoint's pool; `calibration_key`, where given, names their version.
    calibration: Sequence[Mapping[str, Any]] | None = None
    calibration_key: str | None = None

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> LearnedPolicyConfig:
        checkpoint = config.get("checkpoint") or os.environ.get("ORCHESTRA_POLICY_CHECKPOINT")
        if not checkpoint:
            raise ValueError(
                "the learned policy needs a checkpoint: config 'checkpoint' or ORCHESTRA_POLICY_CHECKPOINT"
            )
        preset = str(config.get("preset", "balanced"))
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        lam = config.get("cost_preference")
        weight = config.get("best_of_cost")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int | float)
                                   or not math.isfinite(weight) or weight < 0):  # fmt: skip
            raise ValueError(f"best_of_cost must be a non-negative number, not {weight!r}")
        return cls(
            checkpoint=str(checkpoint),
            cost_preference=float(lam) if lam is not None else PRESETS[preset],
            retries=int(config.get("retries", 1)),
            reward_model=str(config["reward_model"]) if config.get("reward_model") else None,
            best_of_cost=float(weight) if weight is not None else None,
            cascade=parse_gate(config.get("cascade")),
            calibration=config.get("calibration"),
            calibration_key=str(config["calibration_key"]) if config.get("calibration_key") else None,
        )


@dataclass(frozen=True)
class LoadedPolicy:
    """A checkpoint, ready to decide: its network, the calibration of the pool it was trained
    on (pair features, exactly as the evaluation computes them; a run with the pool's own
    calibration replaces it and its columns), and its episode length."""

    net: PolicyNet
    context: PoolContext
    columns: dict[tuple[str, str], int]  # (model, primitive) -> the pair's column
    max_steps: int
    gates: Mapping[float, Gate] = field(default_factory=dict)  # λ -> the agreement cascade's gate
    # Its decompose head was trained on composite decisions (`composite.learned`): it decides
    # whether a composite task is split or solved whole. Else composites are split, as before.
    decides_composites: bool = False


def load_policy(path: Path) -> LoadedPolicy:
    net, payload = load_checkpoint(path)
    context = context_from_payload(payload["context"]) if "context" in payload else legacy_context(payload["pool"])
    max_steps = int(payload.get("train", {}).get("sft", {}).get("max_steps", SFTConfig().max_steps))
    gates = gates_from_payload(payload.get("cascade", {}))
    return LoadedPolicy(
        net=net, context=context, columns=pair_columns(context), max_steps=max_steps, gates=gates,
        decides_composites=bool(payload.get("composites")),
    )  # fmt: skip


def pair_columns(context: PoolContext) -> dict[tuple[str, str], int]:
    """(model, primitive) -> the pair's column in the context."""
    return {(info.model, info.primitive): j for j, info in enumerate(context.infos)}


def legacy_context(pool: Mapping[str, Any]) -> PoolContext:
    """A checkpoint from before checkpoints carried their calibration: its per-pair statistics
    only, with no calibration items (the per-item accuracy is then the domain's)."""
    global_acc = np.asarray(pool["global_acc"], dtype=np.float64)
    calibration = Calibration(
        embeddings=np.zeros((0, EMBEDDING_DIM), dtype=np.float32),
        score=np.zeros((0, global_acc.size)),
        global_acc=global_acc,
        domain_acc=np.asarray(pool["domain_acc"], dtype=np.float64),
        domain_cost=np.asarray(pool["domain_cost"], dtype=np.float64),
        cost_ref=float(pool["cost_ref"]),
    )
    return PoolContext(infos=pair_infos([(str(m), str(p)) for m, p in pool["pairs"]], None), calibration=calibration)
