"""`python manage.py export_outcomes --source SOURCE [--source ...] --out FILE.jsonl[.gz]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orchestrator.outcomes import write_outcomes
from studio.services.outcomes import outcome_records


class Command(BaseCommand):
    help = (
        "Write the recorded outcomes of one or more sources (a collection's is collection-<id>) to a canonical "
        "outcome file (.jsonl or .jsonl.gz), the format import_outcomes, train_policy --outcomes and "
        "orchestrator.evaluate read."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--source", action="append", required=True, help="a source to export (repeatable)")
        parser.add_argument("--out", type=Path, required=True, help="the file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        if not out.name.endswith((".jsonl", ".jsonl.gz")):
            raise CommandError(f"--out must end in .jsonl or .jsonl.gz, not {out.name!r}")
        if not out.parent.is_dir():
            raise CommandError(f"No such directory: {out.parent}")
        sources = list(dict.fromkeys(options["source"]))
        records, counts = outcome_records(sources=sources)
        empty = [source for source in sources if not counts.get(source)]
        if empty:
            raise CommandError(f"No recorded outcome has the source(s) {', '.join(empty)}.")
        written = write_outcomes(out, records)
        self.stdout.write(f"{written} outcome(s) from {', '.join(sources)} written to {out}")
