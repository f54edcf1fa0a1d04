"""Evaluations: queue an offline evaluation, record its progress, keep its report.

An evaluation runs `python -m orchestrator.evaluate` (kind `items`: the learned policy and
every baseline on recorded outcomes) or `python -m orchestrator.evaluate_composite` (kind
`composites`: composite tasks built from recorded items, split or solved whole) in a worker
on queue `training` (workers.tasks.evaluate). Its config is checked and completed here, from
a preset: "quick" (a seeded subset and a small learned policy, for a look in a minute or
so) or "full" (everything, the learned policy's default sizes). Progress is written to the
row, one step per method (per seed and penalty for composites); the report is the CLI's
JSON report. Its lifecycle is studio.services.jobs'.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from studio import queues
from studio.errors import Invalid, NotFound
from studio.models import Checkpoint, CheckpointKind, EvaluationRun, User
from studio.services.training import check_collections, check_learned_config, shipped_outcomes

DEFAULT_OUTCOMES = ("llmrouter.jsonl.gz",)  # an upstream split, every method applies but two
KINDS = ("items", "composites")
DEFAULT_COMPOSITE_OUTCOMES = ("routerbench.jsonl.gz", "llmrouter.jsonl.gz")

PRESETS: dict[str, dict[str, Any]] = {
    # About 25 s on 2 cores (docs/evaluation.md): 2000 train and 300 test items of LLMRouter,
    # an SFT-only learned policy at 9 values of λ.
    "quick": {
        "max_train_items": 2000,
        "max_test_items": 300,
        "learned": {
            "sft": {"reliability_epochs": 6, "epochs": 8},
            "rl": {"iterations": 0},
            "knobs": [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0],
        },
    },
    # What `python -m orchestrator.evaluate` does with no options: every item, default sizes.
    "full": {"max_train_items": None, "max_test_items": None, "learned": None},
}
COMPOSITE_PRESETS: dict[str, dict[str, Any]] = {
    # 300 train and 150 test composites of RouterBench and LLMRouter, an SFT-only policy at
    # 9 values of λ, its decompose head briefly: a couple of minutes on 2 cores.
    "quick": {
        "train_count": 300,
        "test_count": 150,
        "learned": {
            "sft": {"reliability_epochs": 6, "epochs": 8},
            "rl": {"iterations": 0},
            "knobs": [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0],
            "cascade_knobs": [],
            "decompose": {"epochs": 20, "rl_iterations": 20},
        },
    },
    # What `python -m orchestrator.evaluate_composite` does with no options.
    "full": {"train_count": 2000, "test_count": 1000, "learned": None},
}


def evaluations_dir() -> Path:
    return Path(settings.DATA_DIR) / "evaluations"


def method_names(kind: str = "items") -> tuple[str, ...]:
    if kind == "composites":
        from orchestrator.offline.composites import METHODS

        return tuple(METHODS)
    from orchestrator.offline.items import METHOD_NAMES

    return METHOD_NAMES


def check_outcome_names(field: str, names: list[str]) -> None:
    shipped = {path.name for path in shipped_outcomes()}
    unknown = sorted(set(names) - shipped)
    if unknown:
        known = ", ".join(sorted(shipped))
        raise Invalid(field, f"Unknown outcome files: {', '.join(unknown)}; shipped: {known}.")


def check_methods(methods: list[str], kind: str = "items") -> None:
    known = method_names(kind)
    unknown = [name for name in methods if name not in known]
    if unknown:
        raise Invalid("methods", f"Unknown methods: {', '.join(unknown)}; choose from {', '.join(known)}.")


def policy_checkpoint(checkpoint_id: int) -> Checkpoint:
    checkpoint = Checkpoint.objects.filter(pk=checkpoint_id).first()
    if checkpoint is None:
        raise NotFound(f"There is no checkpoint with id {checkpoint_id}.")
    if checkpoint.kind != CheckpointKind.POLICY:
        raise Invalid("checkpoint_id", f"Checkpoint {checkpoint.name} is a {checkpoint.kind}, not a policy.")
    return checkpoint


def evaluation_config(
    *,
    preset: str,
    outcomes: list[str],
    train: list[str],
    probe: int,
    seed: int,
    methods: list[str],
    learned: dict[str, Any] | None,
    max_train_items: int | None,
    max_test_items: int | None,
    checkpoint: Checkpoint | None,
    kind: str = "items",
    penalty: float = 0.0,
    sensitivity: list[float] | None = None,
    train_count: int | None = None,
    test_count: int | None = None,
    collections: list[int] | None = None,
) -> dict[str, Any]:
    """The complete config an evaluation runs with: the preset, then a checkpoint's training
    config for the learned policy, then what the request set explicitly. `collections` are
    tested on beside the outcome files (alone, when no file is named)."""
    if preset not in PRESETS:
        raise Invalid("preset", f"Unknown preset {preset!r}; choose from {', '.join(PRESETS)}.")
    if kind not in KINDS:
        raise Invalid("kind", f"Unknown kind {kind!r}; choose from {', '.join(KINDS)}.")
    if kind == "composites":
        return composite_config(
            preset=preset, outcomes=outcomes, train=train, probe=probe, seed=seed, methods=methods, learned=learned,
            penalty=penalty, sensitivity=sensitivity or [], train_count=train_count, test_count=test_count,
            checkpoint=checkpoint,
        )  # fmt: skip
    for field, value in (("penalty", penalty), ("sensitivity", sensitivity), ("train_count", train_count),
                         ("test_count", test_count)):  # fmt: skip
        if value:
            raise Invalid(field, f"{field} applies to composite evaluations (kind composites) only.")
    collections = collections or []
    try:
        check_collections(collections)
    except Invalid as error:
        raise Invalid("collections", error.message) from None
    base = PRESETS[preset]
    check_outcome_names("outcomes", outcomes)
    check_outcome_names("train", train)
    check_methods(methods)
    if probe and not train:
        raise Invalid("probe", "probe needs train: it reveals items of an unseen pool for calibration.")
    if learned is None and checkpoint is not None:
        learned = {k: v for k, v in checkpoint.config.items() if k in ("policy", "sft", "rl", "knobs", "threads")}
        check_learned_config("checkpoint_id", learned)
    elif learned is not None:
        check_learned_config("learned", learned)
    return {
        "preset": preset,
        "outcomes": outcomes or ([] if collections else list(DEFAULT_OUTCOMES)),
        "collections": collections,
        "train": train,
        "probe": probe,
        "seed": seed,
        "methods": methods or list(method_names()),
        "learned": learned if learned is not None else base["learned"],
        "max_train_items": max_train_items if max_train_items is not None else base["max_train_items"],
        "max_test_items": max_test_items if max_test_items is not None else base["max_test_items"],
        "checkpoint_id": checkpoint.pk if checkpoint else None,
    }


def composite_config(
    *,
    preset: str,
    outcomes: list[str],
    train: list[str],
    probe: int,
    seed: int,
    methods: list[str],
    learned: dict[str, Any] | None,
    penalty: float,
    sensitivity: list[float],
    train_count: int | None,
    test_count: int | None,
    checkpoint: Checkpoint | None,
) -> dict[str, Any]:
    """A composite evaluation's config (`evaluate_composite`): composites drawn from the
    outcome files' own train and test items, so `train` and `probe` do not apply."""
    if train or probe:
        raise Invalid("train", "A composite evaluation draws its composites from the outcomes' own split.")
    check_outcome_names("outcomes", outcomes)
    check_methods(methods, "composites")
    for field, value in (("penalty", penalty), *(("sensitivity", p) for p in sensitivity)):
        if not 0.0 <= value <= 1.0:
            raise Invalid(field, f"An interference penalty is within [0, 1], not {value}.")
    base = COMPOSITE_PRESETS[preset]
    if learned is None and checkpoint is not None:
        keep = ("policy", "sft", "rl", "knobs", "threads", "decompose")
        learned = {k: v for k, v in checkpoint.config.items() if k in keep}
        check_learned_config("checkpoint_id", learned)
    elif learned is not None:
        check_learned_config("learned", learned)
    return {
        "kind": "composites",
        "preset": preset,
        "outcomes": outcomes or list(DEFAULT_COMPOSITE_OUTCOMES),
        "seed": seed,
        "methods": methods or list(method_names("composites")),
        "learned": learned if learned is not None else base["learned"],
        "penalty": penalty,
        "sensitivity": sorted(set(sensitivity)),
        "train_count": train_count if train_count is not None else base["train_count"],
        "test_count": test_count if test_count is not None else base["test_count"],
        "checkpoint_id": checkpoint.pk if checkpoint else None,
    }


@transaction.atomic
def evaluation_create(*, user: User, options: dict[str, Any]) -> EvaluationRun:
    """Queue an evaluation on queue `training`; `options` are `evaluation_config`'s arguments,
    with `checkpoint_id` (a policy checkpoint, or None) for `checkpoint`."""
    options = dict(options)
    checkpoint_id = options.pop("checkpoint_id", None)
    checkpoint = policy_checkpoint(checkpoint_id) if checkpoint_id is not None else None
    config = evaluation_config(**options, checkpoint=checkpoint)
    run = EvaluationRun.objects.create(config=config, checkpoint=checkpoint, created_by=user)
    transaction.on_commit(lambda: queues.send(queues.EVALUATE, run.pk))
    return run
