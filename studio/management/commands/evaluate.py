"""`python manage.py evaluate [options of python -m orchestrator.evaluate]`: the same
evaluation, stored as an EvaluationRun (its JSON report and Pareto plot) for the studio.
It runs in the command's process (studio.services.evaluation_jobs, on the library
`orchestrator.offline.items`), as POST /api/evaluations does in a worker; options it cannot
use fail the run with exit status 2, saying which."""

from __future__ import annotations

import sys

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
        from orchestrator.errors import UsageError
        from orchestrator.evaluate import main, options
        from studio.services.evaluation_jobs import REFUSED, evaluate_into
        from studio.services.jobs import job_fail

        if {"-h", "--help"} & set(args):
            return main(["--help"])
        run = EvaluationRun.objects.create(status=JobStatus.RUNNING, config={"argv": args}, started_at=timezone.now())
        try:
            config, report, plot = options(args)
        except UsageError as error:
            job_fail(EvaluationRun, run.pk, message=f"{REFUSED}{error}")
            code = 2
        else:
            code = evaluate_into(run.pk, config, report, plot)
        run.refresh_from_db()
        if code != 0:
            self.stderr.write(f"error: {run.message}")
            return code
        self.stdout.write(f"Stored as EvaluationRun {run.pk} ({run.message}).")
        return 0
