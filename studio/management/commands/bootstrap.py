"""`python manage.py bootstrap`: the admin user and the demo pool, if missing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from studio.services.bootstrap import (
    DEMO_POOL,
    LocalModel,
    admin_ensure,
    demo_policy_ensure,
    local_endpoint_ensure,
    primitives_seed,
)


class Command(BaseCommand):
    help = (
        "Create an admin user if none exists (password from ORCHESTRA_ADMIN_PASSWORD, "
        "else generated and printed once), the standard primitives, and the demo pool: the "
        "local model (ORCHESTRA_LOCAL_MODEL_URL, which `up` sets) and the recorded outcomes "
        "shipped in data/outcomes, served as replay/<model>; then, unless "
        "ORCHESTRA_DEMO_POLICY=false, queues the demo policy's training. Safe to run again."
    )

    def _local_model(self) -> None:
        """The local model's endpoint in the demo pool, where `up` serves one (or
        ORCHESTRA_LOCAL_MODEL_URL names one)."""
        url = settings.ORCHESTRA_LOCAL_MODEL_URL
        if not settings.ORCHESTRA_LOCAL_MODEL or not url:
            return
        local = LocalModel(
            url=url,
            name=settings.ORCHESTRA_LOCAL_MODEL_NAME,
            price_per_mtok=settings.ORCHESTRA_LOCAL_MODEL_PRICE,
            context=settings.ORCHESTRA_LOCAL_MODEL_CONTEXT,
        )
        endpoint, made = local_endpoint_ensure(pool_name=DEMO_POOL, local=local)
        what = "added to" if made else "in"
        self.stdout.write(f"Local model: {endpoint.model} at {url}, {what} pool {DEMO_POOL!r}.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--admin-username", default=os.environ.get("ORCHESTRA_ADMIN_USERNAME", "admin"))

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user, generated = admin_ensure(
                username=options["admin_username"], password=os.environ.get("ORCHESTRA_ADMIN_PASSWORD")
            )
        except ValidationError as error:
            raise CommandError(f"--admin-username {options['admin_username']!r}: {' '.join(error.messages)}") from None
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin user {user.username!r} with password {generated!r}. It is shown only this once."
                )
            )
        else:
            self.stdout.write(f"Admin user: {user.username}")
        primitives_seed()
        self._local_model()
        outcomes = Path(settings.OUTCOMES_DIR)
        files = sorted(outcomes.glob("*.jsonl.gz"))
        if not files:
            self.stdout.write(self.style.WARNING(f"No recorded outcomes in {outcomes}; no replay endpoints."))
            return
        prices = outcomes / "prices.json"
        extra = ["--prices", str(prices)] if prices.exists() else []
        call_command("import_outcomes", *map(str, files), *extra, "--pool", DEMO_POOL, stdout=self.stdout)
        if not settings.ORCHESTRA_DEMO_POLICY:
            return
        job = demo_policy_ensure(user=user)
        if job is not None:
            why = (
                f"checkpoint {job.config['replaces']} was trained on older text embeddings; it serves runs until then"
                if "replaces" in job.config
                else "runs use the learned policy once it is done"
            )
            self.stdout.write(
                f"Training the demo policy on RouterBench's and the local model's outcomes (training job {job.pk}, "
                f"a few minutes); {why}. Progress: /api/training/jobs/{job.pk}"
            )
