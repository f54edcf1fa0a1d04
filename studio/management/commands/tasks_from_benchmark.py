"""`python manage.py tasks_from_benchmark --benchmark NAME --n K [--seed S] --owner USERNAME`"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orchestrator.benchmark_tasks import BENCHMARKS
from studio.errors import ApplicationError
from studio.models import User
from studio.services.tasks import tasks_from_benchmark


def user_named(name: str) -> User:
    user = User.objects.filter(username=name).first()
    if user is None:
        raise CommandError(f"There is no user {name!r}.")
    return user


class Command(BaseCommand):
    help = (
        "Make checker-verified tasks of a seeded sample of a vendored benchmark's items (data/benchmarks/), "
        "each with the metadata its checker and primitives need. An item the owner has a task of already "
        "is not made again. docs/collect.md."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--benchmark", required=True, help=f"one of {', '.join(BENCHMARKS)}")
        parser.add_argument("--n", type=int, required=True, help="how many items")
        parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
        parser.add_argument("--owner", required=True, help="the user the tasks belong to")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_named(options["owner"])
        try:
            made = tasks_from_benchmark(
                owner=owner, benchmark=options["benchmark"], n=options["n"], seed=options["seed"]
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        already = f" ({made.existing} of the sample were there already)" if made.existing else ""
        self.stdout.write(f"{made.created} task(s) of {options['benchmark']} made for {owner.username}{already}.")
