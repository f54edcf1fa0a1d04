"""`python manage.py import_preferences PATH --owner USERNAME`: a .jsonl[.gz] file or a `datasets` directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orchestrator.reward.hf import read_dataset
from orchestrator.reward.jsonl import PreferenceFormatError, read_preferences, record_to_json
from studio.errors import ApplicationError
from studio.models import User
from studio.services.preferences import preferences_import


class Command(BaseCommand):
    help = (
        "Import prompt/chosen/rejected preference records (TRL's format) as tasks, runs and pairs, all or nothing: "
        "a JSON Lines file (.jsonl or .jsonl.gz) or a Hugging Face `datasets` directory (export_preferences "
        "--format datasets writes one). Errors name their line (or row)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path, help="a .jsonl[.gz] file or a datasets directory")
        parser.add_argument("--owner", required=True, help="the researcher the imported tasks and pairs belong to")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        user = User.objects.filter(username=options["owner"]).first()
        if user is None:
            raise CommandError(f"There is no user {options['owner']!r}.")
        if not path.exists():
            raise CommandError(f"No such file or directory: {path}")
        try:
            records = read_dataset(path) if path.is_dir() else read_preferences(path)
        except PreferenceFormatError as exc:
            raise CommandError(str(exc)) from None
        try:
            report = preferences_import(user=user, text="\n".join(record_to_json(r) for r in records))
        except ApplicationError as exc:  # the lines at fault are named in the message
            raise CommandError(exc.message) from None
        self.stdout.write(f"{report['pairs']} pair(s) imported: {report['by_source']}")
