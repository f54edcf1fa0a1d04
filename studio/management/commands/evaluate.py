"""`python manage.py evaluate [options of python -m orchestrator.evaluate]`: the same
evaluation, stored as an EvaluationRun (its JSON report and Pareto plot) for the studio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connections
from django.utils import timezone

from studio.models import EvaluationRun, JobStatus


class Command(BaseCommand):
    help = (
        "Evaluate the learned policy and every baseline on recorded outcomes (the options of "
        "`python -m orchestrator.evaluate`; see docs/evaluation.md) and store the report as an EvaluationRun."
    )

    def run_from_argv(self, argv: list[str]) -> None:
        """The evaluation's own options pass through untouched (Django's parser would refuse them)."""
        import django

        django.setup()
        try:
            code = self.evaluate(argv[2:])
        finally:
            connections.close_all()
        sys.exit(code)

    def evaluate(self, args: list[str]) -> int:
        from orchestrator.evaluate import main

        if {"-h", "--help"} & set(args):
            return main(["--help"])
        run = EvaluationRun.objects.create(status=JobStatus.RUNNING, config={"argv": args}, started_at=timezone.now())
        folder = Path(settings.DATA_DIR) / "evaluations"
        folder.mkdir(parents=True, exist_ok=True)
        report = folder / f"evaluation-{run.pk}.json"
        plot = folder / f"evaluation-{run.pk}.png"
        extra = [
            *(["--json", str(report)] if "--json" not in args else []),
            *(["--plot", str(plot)] if "--plot" not in args else []),
        ]
        try:
            code = main([*args, *extra])
        except SystemExit as exit:  # argparse: a usage error, already printed
            code = exit.code if isinstance(exit.code, int) else 2
        except Exception as error:
            self._finish(run, JobStatus.FAILED, {}, f"{type(error).__name__}: {error}")
            raise
        if code != 0:
            self._finish(run, JobStatus.FAILED, {}, f"the evaluation exited with status {code}")
            return int(code)
        path = Path(args[args.index("--json") + 1]) if "--json" in args else report
        self._finish(run, JobStatus.SUCCEEDED, json.loads(path.read_text()), f"report {path}")
        self.stdout.write(f"Stored as EvaluationRun {run.pk} (report {path}).")
        return 0

    @staticmethod
    def _finish(run: EvaluationRun, status: str, report: dict[str, Any], message: str) -> None:
        run.status, run.report, run.message, run.finished_at = status, report, message, timezone.now()
        run.progress = 1.0 if status == JobStatus.SUCCEEDED else run.progress
        run.save(update_fields=["status", "report", "message", "finished_at", "progress"])
