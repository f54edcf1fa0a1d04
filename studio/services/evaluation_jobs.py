"""Running an evaluation into an EvaluationRun row, in a worker (`workers.evaluate`) and in
`manage.py evaluate`, with its progress on the row (one step per method), then its JSON report
and Pareto plot, or a failure in plain words.

Items go through the library (`orchestrator.offline.items.evaluate_items`), its config built
from the row's, a usage error typed (`UsageError`). Composites go through
`orchestrator.evaluate_composite.main` with CLI options (`evaluate_into`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from orchestrator.errors import UsageError
from orchestrator.offline.items import ItemsConfig, evaluate_items
from studio.services.evaluations import (
    evaluation_fail,
    evaluation_finish,
    evaluation_progress,
    evaluation_start,
    evaluations_dir,
)
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


def evaluation_argv(evaluation_id: int, config: dict[str, Any]) -> list[str]:
    """The CLI options of a checked composites config; the learned policy's config is written
    beside the report, where the CLI reads it."""
    outcomes, prices = _outcomes(evaluation_id, config)
    args = ["--outcomes", *(str(path) for path in outcomes), *(["--prices", str(prices)] if prices else [])]
    args += ["--seeds", str(config.get("seed", 0)), "--methods", ",".join(config["methods"])]
    args += ["--train-count", str(config["train_count"]), "--test-count", str(config["test_count"])]
    args += ["--penalty", str(config.get("penalty", 0.0))]
    if config.get("sensitivity"):
        args += ["--sensitivity", ",".join(str(p) for p in config["sensitivity"])]
    return args + learned_config_args(evaluation_id, config)


def learned_config_args(evaluation_id: int, config: dict[str, Any]) -> list[str]:
    """--learned-config of a file beside the report holding the config's learned section."""
    if config.get("learned") is None:
        return []
    path = evaluations_dir() / f"evaluation-{evaluation_id}-learned.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config["learned"], indent=1))
    return ["--learned-config", str(path)]


def _progress(evaluation_id: int) -> Any:
    def progress(done: int, total: int, method: str) -> None:
        message = f"fitting {method} ({done + 1} of {total})" if method else "writing the report"
        evaluation_progress(evaluation_id=evaluation_id, progress=done / max(1, total), message=message)

    return progress


def _failed(evaluation_id: int, error: BaseException) -> None:
    """Record an evaluation stopped by `error` on its row (the caller raises it on)."""
    if isinstance(error, SoftTimeLimitExceeded):
        evaluation_fail(evaluation_id=evaluation_id, message="The evaluation ran past its time limit and was stopped.")
    else:
        evaluation_fail(evaluation_id=evaluation_id, message=f"The evaluation failed: {type(error).__name__}: {error}")


def evaluate_items_into(
    evaluation_id: int, config: ItemsConfig, report: Path | None = None, plot: Path | None = None
) -> int:
    """Run an items evaluation into a running EvaluationRun; 0, or 2 for options the library
    refused (recorded on the row in its words). The report and the plot go to
    DATA_DIR/evaluations/ unless given. An unexpected error is recorded on the row, then raised."""
    folder = evaluations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    report = report or folder / f"evaluation-{evaluation_id}.json"
    plot = plot or folder / f"evaluation-{evaluation_id}.png"
    evaluation_progress(evaluation_id=evaluation_id, progress=0.0, message="loading outcomes and embedding prompts")
    try:
        result = evaluate_items(config, _progress(evaluation_id))
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(result.to_json(), indent=1, allow_nan=False))
        plot.parent.mkdir(parents=True, exist_ok=True)
        result.plot(plot)
    except UsageError as error:
        evaluation_fail(evaluation_id=evaluation_id, message=f"{REFUSED}{error}")
        return 2
    except Exception as error:  # SoftTimeLimitExceeded included
        _failed(evaluation_id, error)
        raise
    evaluation_finish(evaluation_id=evaluation_id, report=json.loads(report.read_text()), message=f"report {report}")
    return 0


class _Tee(io.TextIOBase):
    """Writes through to `stream` and keeps what was written, to find argparse's message."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.text = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.text.write(text)
        return int(self.stream.write(text))

    def flush(self) -> None:
        self.stream.flush()


def _usage_error(text: str) -> str | None:
    lines = [line.split(": error: ", 1)[1] for line in text.splitlines() if ": error: " in line]
    return lines[-1] if lines else None


def _named_report(args: list[str]) -> str | None:
    """The --json that `args` name, where they name one well-formed; the composite evaluation's
    own parser reports a malformed one."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--json")
    try:
        named, _ = parser.parse_known_args(args)
    except argparse.ArgumentError:
        return None
    return str(named.json) if named.json else None


def evaluate_into(evaluation_id: int, args: list[str]) -> int:
    """Run the composite evaluation with CLI options `args` into a running EvaluationRun; the
    exit code. The report goes to DATA_DIR/evaluations/ unless `args` name a --json. An
    unexpected error is recorded on the row, then raised."""
    from orchestrator.evaluate_composite import main

    folder = evaluations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    named = _named_report(args)
    report = Path(named) if named else folder / f"evaluation-{evaluation_id}.json"
    evaluation_progress(evaluation_id=evaluation_id, progress=0.0, message="loading outcomes and embedding prompts")
    stderr = _Tee(sys.stderr)
    try:
        with contextlib.redirect_stderr(stderr):
            code = main([*args, *([] if named else ["--json", str(report)])], on_progress=_progress(evaluation_id))
    except SystemExit as exit:  # argparse: a usage error, already printed
        code = exit.code if isinstance(exit.code, int) else 2
    except Exception as error:  # SoftTimeLimitExceeded included
        _failed(evaluation_id, error)
        raise
    if code != 0:
        reason = _usage_error(stderr.text.getvalue()) or f"it exited with status {code}"
        evaluation_fail(evaluation_id=evaluation_id, message=f"{REFUSED}{reason}")
        return int(code)
    evaluation_finish(evaluation_id=evaluation_id, report=json.loads(report.read_text()), message=f"report {report}")
    return 0


def run_evaluation(evaluation_id: int, worker: str = "") -> None:
    """Run a queued evaluation to its end on `worker` (a Celery node name): a report, or a failure with its reason."""
    run = evaluation_start(evaluation_id=evaluation_id, worker=worker)
    if run is None:
        log.info("evaluation %s is gone or not queued; nothing to do", evaluation_id)
        return
    composites = run.config.get("kind") == "composites"
    try:
        work = evaluation_argv(run.pk, run.config) if composites else items_config(run.pk, run.config)
    except (KeyError, TypeError, ValueError, OSError) as error:
        evaluation_fail(evaluation_id=run.pk, message=f"The evaluation's config cannot be used: {error!r}")
        return
    try:
        if isinstance(work, ItemsConfig):
            evaluate_items_into(run.pk, work)
        else:
            evaluate_into(run.pk, work)
    except Exception:  # already recorded on the row
        log.exception("evaluation %s failed", run.pk)
