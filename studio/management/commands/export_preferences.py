"""`python manage.py export_preferences --out PATH [--format jsonl|datasets] [--source SOURCE]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from orchestrator.reward.hf import write_dataset
from orchestrator.reward.jsonl import write_preferences
from studio.models import PairSource
from studio.selectors.preferences import preferences_export


class Command(BaseCommand):
    help = (
        "Write every preference pair with a winner as prompt/chosen/rejected records (TRL's preference format): "
        "JSON Lines (.jsonl or .jsonl.gz), or a Hugging Face `datasets` directory (--format datasets, "
        "datasets.load_from_disk reads it). Pairs without a winner are counted, not written."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--out", type=Path, required=True, help="a .jsonl[.gz] file, or a directory for datasets")
        parser.add_argument("--format", choices=("jsonl", "datasets"), default="jsonl")
        parser.add_argument("--source", choices=PairSource.values, help="only pairs of this source (e.g. human)")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        if not out.parent.is_dir():
            raise CommandError(f"No such directory: {out.parent}")
        if options["format"] == "jsonl" and not out.name.endswith((".jsonl", ".jsonl.gz")):
            raise CommandError(f"--out must end in .jsonl or .jsonl.gz for --format jsonl, not {out.name!r}")
        if options["format"] == "datasets" and out.exists() and not out.is_dir():
            raise CommandError(f"{out} is a file; --format datasets writes a directory")
        export = preferences_export(source=options["source"] or "")
        if not export.records:
            raise CommandError("No preference pair has a winner yet: label some, or import some.")
        write = write_dataset if options["format"] == "datasets" else write_preferences
        count = write(out, export.records)
        skipped = ", ".join(f"{why}: {n}" for why, n in sorted(export.skipped.items()))
        self.stdout.write(f"{count} pair(s) written to {out}" + (f"; left out ({skipped})" if skipped else ""))
