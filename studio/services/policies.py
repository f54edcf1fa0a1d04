"""Which policy a run acts under, and with what: its config plus, for the learned policy,
the checkpoint it loads (the one the run names, else the default policy checkpoint) and the
probe outcomes of its pool's calibration source (`ModelPool.calibration_source`), and for a
best-of-N run the default reward model that picks among the candidates."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from orchestrator.core.policy import Policy
from orchestrator.errors import CheckpointError
from orchestrator.policies import make_policy
from studio.errors import Invalid, ServerError
from studio.models import Checkpoint, CheckpointKind
from studio.selectors.pools import pool_calibration
from studio.services.reward import reward_model_file

log = logging.getLogger(__name__)

CHECKPOINTED = {"learned"}  # policies that load a trained checkpoint


def default_policy() -> str:
    """The policy a run gets when it names none: the learned one once a policy checkpoint
    is the default (`make up` trains one), else the default policy."""
    learned = Checkpoint.objects.filter(kind=CheckpointKind.POLICY, is_default=True).exists()
    return "learned" if learned else "default"


def run_checkpoint(*, policy: str, checkpoint_id: int | None) -> Checkpoint | None:
    """The checkpoint a new run of `policy` uses; a clear 422 when there is none to use."""
    if policy not in CHECKPOINTED:
        if checkpoint_id is not None:
            raise Invalid("checkpoint_id", f"The {policy!r} policy uses no checkpoint.")
        return None
    checkpoints = Checkpoint.objects.filter(kind=CheckpointKind.POLICY)
    if checkpoint_id is not None:
        checkpoint = checkpoints.filter(pk=checkpoint_id).first()
        if checkpoint is None:
            raise Invalid("checkpoint_id", f"There is no policy checkpoint with id {checkpoint_id}.")
        return checkpoint
    checkpoint = checkpoints.filter(is_default=True).first()
    if checkpoint is None:
        raise Invalid(
            "checkpoint_id",
            "The learned policy needs a trained checkpoint and none is the default yet: "
            "train one (POST /api/training/jobs) or name one with checkpoint_id.",
        )
    return checkpoint


def policy_config(
    config: dict[str, Any], checkpoint: Checkpoint | None, *, best_of: int = 1, pool_id: int | None = None
) -> dict[str, Any]:
    """The config a policy is made with: the run's own, plus its checkpoint's file, plus for
    best_of > 1 the default reward model's file (absent when there is none: the run then
    solves with its first choice, as for best_of 1), plus for a checkpointed policy on the
    pool `pool_id` the pool's probe outcomes as `calibration`, where it has some and the
    run's config brings none."""
    full = dict(config)
    if checkpoint is not None:
        full["checkpoint"] = str(Path(settings.DATA_DIR) / checkpoint.path)
        if pool_id is not None and "calibration" not in full:
            calibration = pool_calibration(pool_id=pool_id)
            if calibration is not None:
                full["calibration_key"], full["calibration"] = calibration
    if best_of > 1:
        reward_model = reward_model_file()
        if reward_model is not None:
            full["reward_model"] = str(reward_model)
    return full


def check_policy(name: str, config: dict[str, Any], checkpoint: Checkpoint | None = None) -> None:
    """Refuse, with a 422 naming the field, a policy that does not exist or will not load."""
    policy_build(name, config, checkpoint)


def policy_build(
    name: str, config: dict[str, Any], checkpoint: Checkpoint | None = None, *, pool_id: int | None = None
) -> Policy:
    """The policy a run of `name` acts under (its config as `policy_config` completes it for
    the pool `pool_id`); a 422 naming the field when it does not exist or will not load, a 500
    when the studio's checkpoint file is at fault."""
    if "checkpoint" in config:
        raise Invalid("policy_config", "Name a checkpoint with checkpoint_id, not by its path.")
    if "reward_model" in config:
        raise Invalid("policy_config", "best_of uses the default reward model; promote a checkpoint to change it.")
    try:
        return make_policy(name, policy_config(config, checkpoint, pool_id=pool_id))
    except CheckpointError as exc:
        # The file the studio keeps is at fault, not the request.
        log.error("policy checkpoint %s does not load: %s", checkpoint.name if checkpoint else "?", exc)
        raise ServerError(
            f"The policy checkpoint {checkpoint.name if checkpoint else ''!r} cannot be loaded (the server's log "
            "says why); an admin can promote another one or train one again."
        ) from None
    except KeyError as exc:
        raise Invalid("policy", str(exc.args[0])) from None
    except (TypeError, ValueError, OSError, RuntimeError) as exc:
        raise Invalid("policy_config", f"The policy's configuration is not valid: {exc}") from None
