"""Training jobs and checkpoints: queue a job, record its progress, keep what it made.

A job runs on queue `training` (workers.tasks.train); its lifecycle is studio.services.jobs',
its progress written to the row and sent to the channel group `training.<id>`. What it trains
is stored as a Checkpoint with its config, metrics and lineage; the first checkpoint of a kind
becomes the default, and `checkpoint_promote` makes another one the default.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from studio import queues
from studio.errors import Conflict, Invalid, NotFound
from studio.models import Checkpoint, CheckpointKind, JobStatus, TrainingJob, User
from studio.services.jobs import job_end, job_progress

HISTORY_LIMIT = 2000  # points kept for curves; later points thin the history evenly
TRAINABLE = {CheckpointKind.POLICY, CheckpointKind.REWARD_MODEL}


def checkpoints_dir() -> Path:
    return Path(settings.DATA_DIR) / "checkpoints"


# The keys a job's config may have; `demo` marks the job `make up` queues for the demo policy.
COMMON_KEYS = frozenset({"seed", "outcomes", "replaces", "collections"})
KIND_KEYS = {
    CheckpointKind.POLICY: frozenset({"learned", "demo", "unseen", "guide"}),
    CheckpointKind.REWARD_MODEL: frozenset({"rm", "preferences", "live_runs"}),
}


def check_training_config(kind: str, config: dict[str, Any]) -> None:
    if kind not in TRAINABLE:
        known = ", ".join(sorted(TRAINABLE))
        raise Invalid("kind", f"Training {kind!r} is not available; trainable kinds: {known}.")
    seed = config.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise Invalid("config.seed", "seed must be a non-negative integer.")
    outcomes = config.get("outcomes", [])
    if not isinstance(outcomes, list) or not all(isinstance(name, str) and name for name in outcomes):
        raise Invalid("config.outcomes", "outcomes must be a list of outcome file names.")
    shipped = {path.name for path in shipped_outcomes()}
    unknown = sorted(set(outcomes) - shipped)
    if unknown:
        known = ", ".join(sorted(shipped))
        raise Invalid("config.outcomes", f"Unknown outcome files: {', '.join(unknown)}; shipped: {known}.")
    check_collections(config.get("collections", []))
    replaces = config.get("replaces")
    if replaces is not None and (
        isinstance(replaces, bool)
        or not isinstance(replaces, int)
        or not Checkpoint.objects.filter(pk=replaces, kind=kind).exists()
    ):
        raise Invalid("config.replaces", f"replaces must be the id of a {kind} checkpoint; {replaces!r} is not.")
    allowed = COMMON_KEYS | KIND_KEYS[CheckpointKind(kind)]
    unknown_keys = sorted(set(config) - allowed)
    if unknown_keys:
        known = ", ".join(sorted(allowed))
        raise Invalid(
            f"config.{unknown_keys[0]}", f"Not an option of a {kind} job: {', '.join(unknown_keys)}; known: {known}."
        )
    for name in ("demo", "unseen"):
        if not isinstance(config.get(name, False), bool):
            raise Invalid(f"config.{name}", f"{name} must be true or false.")
    if kind == CheckpointKind.REWARD_MODEL:
        check_reward_config(config)
    else:
        check_learned_config("config.learned", config.get("learned", {}))
        check_guide(config)


def check_collections(ids: object) -> None:
    """A job's `collections`: ids of collections with recorded outcomes, trained on beside the outcome files."""
    from studio.models import Collection, RecordedOutcome

    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise Invalid("config.collections", "collections must be a list of collection ids.")
    sources = dict(Collection.objects.filter(pk__in=ids).values_list("pk", "source"))
    unknown = [str(i) for i in ids if i not in sources]
    if unknown:
        raise Invalid("config.collections", f"Unknown collection(s): {', '.join(unknown)}.")
    kept = set(RecordedOutcome.objects.filter(source__in=sources.values()).values_list("source", flat=True).distinct())
    empty = [str(i) for i in ids if sources[i] not in kept]
    if empty:
        raise Invalid("config.collections", f"Collection(s) {', '.join(empty)} have no recorded outcome yet.")


def collection_files(ids: list[int], directory: Path) -> list[Path]:
    """Each collection's outcomes written as a canonical file in `directory` (a job's inputs)."""
    from orchestrator.outcomes import write_outcomes
    from studio.models import Collection
    from studio.services.outcomes import outcome_records

    paths = []
    for source in Collection.objects.filter(pk__in=ids).order_by("pk").values_list("source", flat=True):
        records, _ = outcome_records(sources=[source])
        path = directory / f"{source}.jsonl.gz"
        write_outcomes(path, records)
        paths.append(path)
    return paths


def check_guide(config: dict[str, Any]) -> None:
    """A policy job's `guide`: the id of a reward-model checkpoint whose file is there (reward-guided RL)."""
    guide = config.get("guide")
    if guide is None:
        return
    found = (
        None
        if isinstance(guide, bool) or not isinstance(guide, int)
        else Checkpoint.objects.filter(pk=guide, kind=CheckpointKind.REWARD_MODEL).first()
    )
    if found is None:
        raise Invalid("config.guide", f"guide must be the id of a reward_model checkpoint; {guide!r} is not.")
    if not (Path(settings.DATA_DIR) / found.path).is_file():
        raise Invalid("config.guide", f"the file of reward model {guide} ({found.path}) is missing.")
    if config.get("unseen", False):
        raise Invalid("config.guide", "a guide trains one network: it does not go with unseen.")


def guide_file(guide: int | None) -> Path | None:
    """The file of the reward-model checkpoint `guide` (a policy job's config), or None."""
    if guide is None:
        return None
    return Path(settings.DATA_DIR) / Checkpoint.objects.get(pk=guide, kind=CheckpointKind.REWARD_MODEL).path


def check_config(field: str, value: Any, build: Callable[[Any], object], what: str) -> None:
    """`value` must be an object that `build` (a config's from_mapping) accepts; else a 422 on `field`."""
    try:
        if not isinstance(value, dict):
            raise TypeError("it must be an object")
        build(value)
    except (TypeError, ValueError) as exc:
        raise Invalid(field, f"{what} is not valid: {exc}") from None


def check_learned_config(field: str, learned: Any) -> None:
    """The learned policy's config (LearnedConfig's sections), for training jobs and evaluations."""
    from orchestrator.learning.method import LearnedConfig

    check_config(field, learned, LearnedConfig.from_mapping, "The learned policy's configuration")


def check_reward_config(config: dict[str, Any]) -> None:
    """A reward-model job's own options: `rm` (RMConfig's sections) and the studio's pair sources."""
    from orchestrator.train_rm import RMConfig

    check_config("config.rm", config.get("rm", {}), RMConfig.from_mapping, "The reward model's configuration")
    for name in ("preferences", "live_runs"):
        if not isinstance(config.get(name, True), bool):
            raise Invalid(f"config.{name}", f"{name} must be true or false.")


def shipped_outcomes() -> list[Path]:
    return sorted(Path(settings.OUTCOMES_DIR).glob("*.jsonl.gz"))


@transaction.atomic
def training_job_create(*, user: User, kind: str, config: dict[str, Any]) -> TrainingJob:
    """Queue a training job; it starts when a worker on queue `training` is free."""
    check_training_config(kind, config)
    job = TrainingJob.objects.create(kind=kind, config=config, created_by=user)
    transaction.on_commit(lambda: queues.send(queues.TRAIN, job.pk))
    return job


def training_job_progress(*, job_id: int, progress: float, stage: str, metrics: dict[str, float]) -> None:
    """Record where a running job is: a fraction in [0, 1], a stage, the latest metrics, kept
    over steps for its curves."""
    with transaction.atomic():
        job = TrainingJob.objects.select_for_update().get(pk=job_id)
        point = {"progress": round(min(1.0, max(job.progress, progress)), 4), "stage": stage, **metrics}
        history = [*job.history, point]
        job_progress(
            TrainingJob, job_id, progress=progress, message=stage, metrics={**job.metrics, **metrics},
            history=history[::2] if len(history) > HISTORY_LIMIT else history,
        )  # fmt: skip


@transaction.atomic
def training_job_finish(
    *, job_id: int, path: Path, config: dict[str, Any], metrics: dict[str, Any], lineage: dict[str, Any]
) -> Checkpoint:
    """Keep the job's checkpoint. It becomes the default when it is the first of its kind, or
    when the job was queued to replace the default (`replaces`) and that one still is."""
    job = TrainingJob.objects.select_for_update().get(pk=job_id)
    name = f"{job.kind}-{job.pk}"
    default = Checkpoint.objects.select_for_update().filter(kind=job.kind, is_default=True).first()
    takes_over = default is None or default.pk == job.config.get("replaces")
    if default is not None and takes_over:
        default.is_default = False
        default.save(update_fields=["is_default"])
        lineage = {**lineage, "replaces": default.name}
    checkpoint = Checkpoint.objects.create(
        kind=job.kind, name=name, path=str(path.relative_to(settings.DATA_DIR)), config=config, metrics=metrics,
        lineage=lineage, is_default=takes_over, created_by=job.created_by,
    )  # fmt: skip
    job_end(
        TrainingJob, job_id, status=JobStatus.SUCCEEDED, message="finished", even_if_ended=True,
        metrics={**job.metrics, **metrics}, checkpoint=checkpoint,
    )  # fmt: skip
    return checkpoint


@transaction.atomic
def checkpoint_promote(*, checkpoint_id: int) -> Checkpoint:
    """Make a checkpoint the default of its kind (the one runs use when they name none)."""
    checkpoint = Checkpoint.objects.select_for_update().filter(pk=checkpoint_id).first()
    if checkpoint is None:
        raise NotFound(f"There is no checkpoint with id {checkpoint_id}.")
    if not (Path(settings.DATA_DIR) / checkpoint.path).is_file():
        raise Conflict(f"Checkpoint {checkpoint.name}'s file {checkpoint.path} is missing; it cannot be the default.")
    Checkpoint.objects.filter(kind=checkpoint.kind, is_default=True).exclude(pk=checkpoint.pk).update(is_default=False)
    if not checkpoint.is_default:
        checkpoint.is_default = True
        checkpoint.save(update_fields=["is_default"])
    return checkpoint
