"""`python manage.py bootstrap`: the admin user and the demo pool, if missing."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand

from studio.services.bootstrap import admin_ensure, demo_pool_seed


class Command(BaseCommand):
    help = (
        "Create an admin user if none exists (password from ORCHESTRA_ADMIN_PASSWORD, "
        "else generated and printed once) and seed the demo pool. Safe to run again."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--admin-username", default=os.environ.get("ORCHESTRA_ADMIN_USERNAME", "admin"))

    def handle(self, *args: Any, **options: Any) -> None:
        user, generated = admin_ensure(
            username=options["admin_username"], password=os.environ.get("ORCHESTRA_ADMIN_PASSWORD")
        )
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin user {user.username!r} with password {generated!r}. "
                    "It is shown only this once."
                )
            )
        else:
            self.stdout.write(f"Admin user: {user.username}")
        pool = demo_pool_seed()
        self.stdout.write(f"Demo pool: {pool.name} ({pool.endpoints.count()} endpoints)")
