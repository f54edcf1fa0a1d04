"""Running an evaluation into an EvaluationRun row, in a worker (`workers.evaluate`) and in
`manage.py evaluate`: `orchestrator.evaluate.main` with its progress on the row (one step per
method), then its JSON report and Pareto plot, or a failure in plain words."""

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

from studio.services.evaluations import (
    evaluation_fail,
    evaluation_finish,
    evaluation_progress,
    evaluation_start,
    evaluations_dir,
)
from studio.services.training import collection_files

log = logging.getLogger(__name__)


def evaluation_argv(evaluation_id: int, config: dict[str, Any]) -> list[str]:
    """The CLI options of a checked config (studio.services.evaluations.evaluation_config);
    the learned policy's config is written beside the report, where the CLI reads it."""
    outcomes = Path(settings.OUTCOMES_DIR)
    args = ["--outcomes", *(str(outcomes / name) for name in config["outcomes"])]
    if config.get("collections"):  # written beside the report; their costs are recorded, the shipped prices kept
        directory = evaluations_dir() / f"evaluation-{evaluation_id}-collections"
        directory.mkdir(parents=True, exist_ok=True)
        args += [str(path) for path in collection_files(config["collections"], directory)]
        args += ["--prices", str(outcomes / "prices.json")] if (outcomes / "prices.json").is_file() else []
    if config.get("kind") == "composites":
        args += ["--seeds", str(config.get("seed", 0)), "--methods", ",".join(config["methods"])]
        args += ["--train-count", str(config["train_count"]), "--test-count", str(config["test_count"])]
        args += ["--penalty", str(config.get("penalty", 0.0))]
        if config.get("sensitivity"):
            args += ["--sensitivity", ",".join(str(p) for p in config["sensitivity"])]
        return args + learned_config_args(evaluation_id, config)
    if config.get("train"):
        args += ["--train", *(str(outcomes / name) for name in config["train"])]
    if config.get("probe"):
        args += ["--probe", str(config["probe"])]
    args += ["--seed", str(config.get("seed", 0)), "--methods", ",".join(config["methods"])]
    for option in ("max_train_items", "max_test_items"):
        if config.get(option) is not None:
            args += [f"--{option.replace('_', '-')}", str(config[option])]
    return args + learned_config_args(evaluation_id, config)


def learned_config_args(evaluation_id: int, config: dict[str, Any]) -> list[str]:
    """--learned-config of a file beside the report holding the config's learned section."""
    if config.get("learned") is None:
        return []
    path = evaluations_dir() / f"evaluation-{evaluation_id}-learned.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config["learned"], indent=1))
    return ["--learned-config", str(path)]


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


def _named_outputs(args: list[str]) -> argparse.Namespace | None:
    """The --json and --plot that `args` name (either None where not named); None where they
    are malformed (`--json` without a file), which the evaluation's own parser then reports."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--json")
    parser.add_argument("--plot")
    try:
        named, _ = parser.parse_known_args(args)
    except argparse.ArgumentError:
        return None
    return named


def evaluate_into(evaluation_id: int, args: list[str], kind: str = "items") -> int:
    """Run the evaluation with CLI options `args` into a running EvaluationRun; the exit code.

    The report (and the plot, for items) go to DATA_DIR/evaluations/ unless `args` name a
    --json / --plot. An unexpected error is recorded on the row, then raised.
    """
    if kind == "composites":
        from orchestrator.evaluate_composite import main
    else:
        from orchestrator.evaluate import main

    folder = evaluations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    named = _named_outputs(args)
    report = Path(named.json) if named and named.json else folder / f"evaluation-{evaluation_id}.json"
    plot = kind != "composites" and named is not None and not named.plot
    extra = [
        *(["--json", str(report)] if named and not named.json else []),
        *(["--plot", str(folder / f"evaluation-{evaluation_id}.png")] if plot else []),
    ]

    def progress(done: int, total: int, method: str) -> None:
        message = f"fitting {method} ({done + 1} of {total})" if method else "writing the report"
        evaluation_progress(evaluation_id=evaluation_id, progress=done / max(1, total), message=message)

    evaluation_progress(evaluation_id=evaluation_id, progress=0.0, message="loading outcomes and embedding prompts")
    stderr = _Tee(sys.stderr)
    try:
        with contextlib.redirect_stderr(stderr):
            code = main([*args, *extra], on_progress=progress)
    except SystemExit as exit:  # argparse: a usage error, already printed
        code = exit.code if isinstance(exit.code, int) else 2
    except SoftTimeLimitExceeded:
        evaluation_fail(evaluation_id=evaluation_id, message="The evaluation ran past its time limit and was stopped.")
        raise
    except Exception as error:
        evaluation_fail(evaluation_id=evaluation_id, message=f"The evaluation failed: {type(error).__name__}: {error}")
        raise
    if code != 0:
        reason = _usage_error(stderr.text.getvalue()) or f"it exited with status {code}"
        evaluation_fail(evaluation_id=evaluation_id, message=f"The evaluation's options were refused: {reason}")
        return int(code)
    evaluation_finish(evaluation_id=evaluation_id, report=json.loads(report.read_text()), message=f"report {report}")
    return 0


def run_evaluation(evaluation_id: int, worker: str = "") -> None:
    """Run a queued evaluation to its end on `worker` (a Celery node name): a report, or a failure with its reason."""
    run = evaluation_start(evaluation_id=evaluation_id, worker=worker)
    if run is None:
        log.info("evaluation %s is gone or not queued; nothing to do", evaluation_id)
        return
    try:
        args = evaluation_argv(run.pk, run.config)
    except (KeyError, TypeError, OSError) as error:
        evaluation_fail(evaluation_id=run.pk, message=f"The evaluation's config cannot be used: {error!r}")
        return
    try:
        evaluate_into(run.pk, args, str(run.config.get("kind", "items")))
    except Exception:  # already recorded on the row
        log.exception("evaluation %s failed", run.pk)
