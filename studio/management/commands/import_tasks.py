"""`python manage.py import_tasks FILE.jsonl[.gz] --owner USERNAME`"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from studio.errors import ApplicationError
from studio.management.commands.tasks_from_benchmark import user_named
from studio.services.tasks import tasks_import


class Command(BaseCommand):
    help = (
        "Import your own checker-verified tasks from JSON Lines, one {prompt, gold, checker, domain} object a line "
        "(optional benchmark, metadata); all or nothing: every bad line is named, and nothing is written. "
        "docs/collect.md."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path, help="a .jsonl or .jsonl.gz file")
        parser.add_argument("--owner", required=True, help="the user the tasks belong to")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_named(options["owner"])
        path: Path = options["path"]
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            text = data.decode("utf-8-sig")
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except (OSError, EOFError) as exc:  # a directory, a broken gzip file
            raise CommandError(f"Cannot read {path}: {exc}") from None
        except UnicodeDecodeError:
            raise CommandError(f"{path} is not UTF-8 text.") from None
        try:
            made = tasks_import(owner=owner, text=text)
        except ApplicationError as exc:
            errors = exc.extra.get("errors")
            if not errors:
                raise CommandError(exc.message) from None
            listed = "\n".join(f"  line {error['line']}: {error['message']}" for error in errors)
            raise CommandError(f"{len(errors)} invalid line(s), so nothing was imported:\n{listed}") from None
        self.stdout.write(f"{made.created} task(s) imported for {owner.username}.")
