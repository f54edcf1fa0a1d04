"""`python manage.py create_token [--user admin] [--name cli]`: an API token, printed once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from studio.management.commands.tasks_from_benchmark import user_named
from studio.services.tokens import token_create


class Command(BaseCommand):
    help = (
        "Create an API token for a user and print it (only it, on standard output, so that "
        "TOKEN=$(python manage.py create_token) works). It is shown this once: the studio keeps only its digest. "
        "Revoke it in the studio or with DELETE /api/tokens/{id}."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--user", default="admin", help="whose token (default: admin, whom `up` creates)")
        parser.add_argument("--name", default="cli", help="a name to tell it apart in the token list (default: cli)")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_named(options["user"])
        token, raw = token_create(user=user, name=options["name"])
        self.stderr.write(f"Token {token.prefix}… ({options['name']!r}) for {user.username}, shown this once:")
        self.stdout.write(raw)
