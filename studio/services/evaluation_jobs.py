"""Running an evaluation into an EvaluationRun row, in a worker (`workers.evaluate`) and in
`manage.py evaluate`, with its progress on the row (one step per method), then its JSON report
and Pareto plot, or a failure in plain words.

Both kinds go through the library (`orchestrator.offline.items.evaluate_items`,
`orchestrator.offline.composites.evaluate_composites`), its config built from the row's, a usage
error typed (`UsageError`) and recorded in its own words."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from orchestrator.errors import UsageError
from orchestrator.offline.composites import CompositesConfig, CompositesReport, evaluate_composites
from orchestrator.offline.items import ItemsConfig, ItemsReport, evaluate_items
from studio.models import EvaluationRun, JobStatus
from studio.services.evaluations import evaluations_dir
from studio.services.jobs import job_end, job_fail, job_progress, job_start
from studio.services.training import collection_files

log = logging.getLogger(__name__)

REFUSED = "The evaluation's options were refused: "


def _outcomes(evaluation_id: int, config: dict[str, Any]) -> tuple[list[Path], Path | None]:
    """The outcome files a checked config (studio.services.evaluations.evaluation_config) tests
    on, its collections written beside the report (their costs are recorded, the shipped prices
    kept), and the prices file where collections need one."""
    outcomes = Path(settings.OUTCOMES_DIR)
    paths = [outcomes / name for name in config["outcomes"]]
    if not config.get("collections"):
        return paths, None
    directory = evaluations_dir() / f"evaluation-{evaluation_id}-collections"
    directory.mkdir(parents=True, exist_ok=True)
    paths += collection_files(config["collections"], directory)
    prices = outcomes / "prices.json"
    return paths, prices if prices.is_file() else None


def items_config(evaluation_id: int, config: dict[str, Any]) -> ItemsConfig:
    """The library's config of a checked items config."""
    outcomes, prices = _outcomes(evaluation_id, config)
    shipped = Path(settings.OUTCOMES_DIR)
    return ItemsConfig(
        outcomes=tuple(outcomes),
        train=tuple(shipped / name for name in config["train"]) if config.get("train") else None,
        probe=int(config.get("probe") or 0),
        seed=int(config.get("seed", 0)),
        methods=tuple(config["methods"]),
        prices=prices,
        learned=config.get("learned"),
        max_train_items=config.get("max_train_items"),
        max_test_items=config.get("max_test_items"),
    )


def composites_config(evaluation_id: int, config: dict[str, Any]) -> CompositesConfig:
    """The library's config of a checked composites config."""
    outcomes, prices = _outcomes(evaluation_id, config)
    return CompositesConfig(
        outcomes=tuple(outcomes),
        prices=prices,
        seeds=(int(config.get("seed", 0)),),
        train_count=int(config["train_count"]),
        test_count=int(config["test_count"]),
        methods=tuple(config["methods"]),
        learned=config.get("learned"),
        penalty=float(config.get("penalty", 0.0)),
        sensitivity=tuple(float(p) for p in config.get("sensitivity") or ()),
    )


def _progress(evaluation_id: int) -> Callable[[int, int, str], None]:
    def progress(done: int, total: int, method: str) -> None:
        message = f"fitting {method} ({done + 1} of {total})" if method else "writing the report"
        job_progress(EvaluationRun, evaluation_id, progress=done / max(1, total), message=message)

    return progress


def _failed(evaluation_id: int, error: BaseException) -> None:
    """Record an evaluation stopped by `error` on its row (the caller raises it on)."""
    if isinstance(error, SoftTimeLimitExceeded):
        job_fail(EvaluationRun, evaluation_id, message="The evaluation ran past its time limit and was stopped.")
    else:
        job_fail(EvaluationRun, evaluation_id, message=f"The evaluation failed: {type(error).__name__}: {error}")


def evaluate_into(
    evaluation_id: int, config: ItemsConfig | CompositesConfig, report: Path | None = None, plot: Path | None = None
) -> int:
    """Run an evaluation into a running EvaluationRun; 0, or 2 for options the library refused
    (recorded on the row in its words). The report (and, for items, the Pareto plot) go to
    DATA_DIR/evaluations/ unless given. An unexpected error is recorded on the row, then raised."""
    folder = evaluations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    report = report or folder / f"evaluation-{evaluation_id}.json"
    job_progress(EvaluationRun, evaluation_id, progress=0.0, message="loading outcomes and embedding prompts")
    try:
        result: ItemsReport | CompositesReport
        if isinstance(config, CompositesConfig):
            result = evaluate_composites(config, _progress(evaluation_id))
        else:
            result = evaluate_items(config, _progress(evaluation_id))
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result.to_json(), indent=1))
        if isinstance(result, ItemsReport):
            plot = plot or folder / f"evaluation-{evaluation_id}.png"
            plot.parent.mkdir(parents=True, exist_ok=True)
            result.plot(plot)
    except UsageError as error:
        job_fail(EvaluationRun, evaluation_id, message=f"{REFUSED}{error}")
        return 2
    except Exception as error:  # SoftTimeLimitExceeded included
        _failed(evaluation_id, error)
        raise
    job_end(
        EvaluationRun, evaluation_id, status=JobStatus.SUCCEEDED, message=f"report {report}", even_if_ended=True,
        report=json.loads(report.read_text()),
    )  # fmt: skip
    return 0


def run_evaluation(evaluation_id: int, worker: str = "") -> None:
    """Run a queued evaluation to its end on `worker` (a Celery node name): a report, or a failure with its reason."""
    run = job_start(EvaluationRun, evaluation_id, worker=worker)
    if run is None:
        log.info("evaluation %s is gone or not queued; nothing to do", evaluation_id)
        return
    composites = run.config.get("kind") == "composites"
    try:
        config = composites_config(run.pk, run.config) if composites else items_config(run.pk, run.config)
    except (KeyError, TypeError, ValueError, OSError) as error:
        job_fail(EvaluationRun, run.pk, message=f"The evaluation's config cannot be used: {error!r}")
        return
    try:
        evaluate_into(run.pk, config)
    except Exception:  # already recorded on the row
        log.exception("evaluation %s failed", run.pk)
