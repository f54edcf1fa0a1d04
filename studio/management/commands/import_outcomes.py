"""`python manage.py import_outcomes FILE [FILE ...] [--prices PRICES.json] [--pool NAME]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from studio.errors import ApplicationError
from studio.services.outcomes import load_prices, outcomes_import


def count_lines(path: Path) -> int | None:
    """The progress bar's total; None where the file cannot be read (the import then says why)."""
    import gzip

    opener: Any = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except (OSError, EOFError):
        return None


class Command(BaseCommand):
    help = (
        "Load canonical recorded-outcome files (.jsonl or .jsonl.gz, see docs/workers.md) into the replay table, "
        "and create a replay/<model> endpoint per recorded model, admissible with each recorded primitive. "
        "A file already loaded with the same content is skipped, so re-running is safe."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("files", nargs="+", type=Path, help="canonical outcome files")
        parser.add_argument(
            "--prices", type=Path, help="JSON map model -> {input_per_mtok, output_per_mtok}, for null costs"
        )
        parser.add_argument("--pool", default="replay-demo", help="the pool of replay endpoints (default: replay-demo)")
        parser.add_argument("--force", action="store_true", help="load files again even if already imported")
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["pool"].strip():
            raise CommandError("--pool needs a name")
        missing = [str(path) for path in options["files"] if not path.is_file()]
        if missing:
            raise CommandError(f"No such file: {', '.join(missing)}")
        try:
            prices = load_prices(options["prices"])
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        total = 0
        for path in options["files"]:
            bar = None if options["no_progress"] else tqdm(total=count_lines(path), desc=path.name, unit="rec")
            try:
                report = outcomes_import(
                    path=path,
                    prices=prices,
                    pool_name=options["pool"],
                    force=options["force"],
                    progress=bar.update if bar is not None else None,
                )
            except ApplicationError as exc:
                raise CommandError(exc.message) from None
            finally:
                if bar is not None:
                    bar.close()
            if report.skipped_as_already_imported:
                self.stdout.write(f"{path.name}: already imported (same content); skipped.")
                continue
            total += report.records
            self.stdout.write(
                f"{path.name}: {report.records:,} records, {len(report.models)} models, "
                f"{len(report.pairs)} (model, primitive) pairs in pool {report.pool!r}"
                + (f"; {report.costs_computed:,} costs computed from prices" if report.costs_computed else "")
                + (
                    f"; {report.duplicates:,} line(s) repeated an earlier record, the later line kept"
                    if report.duplicates
                    else ""
                )
            )
        self.stdout.write(self.style.SUCCESS(f"Imported {total:,} records."))
