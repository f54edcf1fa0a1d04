"""Convert recorded-outcome sources into canonical JSONL.gz files.

    python -m workers.importers SOURCE --src DIR --out FILE.jsonl.gz [--assume-completion-tokens N]
                                       [--prices PRICES.json] [--gsm8k-test TEST.jsonl]
    python -m workers.importers all --shared DIR --out-dir data/outcomes [--assume-completion-tokens N]

`all` also writes `prices.json` (prices found in the data) and copies each source's
LICENSE to `licenses/<source>.LICENSE`. It is all or nothing: everything is written into a
staging folder inside the output folder first, and moved into place only when every source
converted, so a failing source leaves every old file as it was. Both print, per source, the records written, the
items, models and primitives, what was skipped and why, and the total cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord, write_outcomes
from workers.importers import SOURCES, llmrouter, options_for
from workers.importers.common import ImportLog, load_prices
from workers.importers.prices import build_prices, write_prices

NO_LICENSE_NOTES = {
    "routerbench": (
        "The shuhao02/RouterDC repository, which these CSVs were copied from, has no LICENSE file.\n"
        "The rows are a subset of RouterBench (withmartian/routerbench), whose dataset is published\n"
        "under the MIT licence; no licence text was present in the snapshot to copy.\n"
    ),
}


@dataclass
class Summary:
    """Counts over the records of one source; a repeated (item, model, primitive) is an error."""

    records: int = 0
    cost_usd: float = 0.0
    without_cost: int = 0
    keys: set[tuple[str, str, str]] = field(default_factory=set)
    items: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    primitives: set[str] = field(default_factory=set)

    def count(self, records: Iterable[OutcomeRecord]) -> Iterator[OutcomeRecord]:
        for record in records:
            key = (record.item_id, record.model, record.primitive)
            if key in self.keys:
                raise ValueError(f"{record.source}: repeated (item, model, primitive) {key}")
            self.keys.add(key)
            self.items.add(record.item_id)
            self.models.add(record.model)
            self.primitives.add(record.primitive)
            self.records += 1
            if record.cost_usd is None:
                self.without_cost += 1
            else:
                self.cost_usd += record.cost_usd
            yield record


def convert(source: str, src: Path, out: Path, options: dict[str, Any], *, shown: Path | None = None) -> None:
    """Convert one source into `out`; the report names `shown` (where the file will end up) if given."""
    importer, _ = SOURCES[source]
    log, summary = ImportLog(), Summary()
    write_outcomes(out, summary.count(importer(src, log=log, **options_for(source, options))))
    report(source, shown or out, summary, log, options)


def report(source: str, out: Path, summary: Summary, log: ImportLog, options: dict[str, Any]) -> None:
    print(f"{source}: {summary.records} records -> {out}")
    print(
        f"  items: {len(summary.items)}  models: {len(summary.models)}  "
        f"primitives: {', '.join(sorted(summary.primitives))}"
    )
    print(f"  models: {', '.join(sorted(summary.models))}")
    print(f"  skipped: {sum(log.skipped.values())}")
    for why, n in log.skipped.items():
        print(f"    {n}  {why}")
    for why, n in log.notes.items():
        print(f"  note: {n}  {why}")
    print(
        f"  cost_usd total: {summary.cost_usd:.6f} over {summary.records - summary.without_cost} records "
        f"({summary.without_cost} without cost)"
    )
    if source == "llmrouter":
        print(f"  assumed completion tokens per call: {options['assume_completion_tokens']}")


def copy_license(source: str, src: Path, out_dir: Path) -> None:
    target = out_dir / "licenses" / f"{source}.LICENSE"
    target.parent.mkdir(parents=True, exist_ok=True)
    if (src / "LICENSE").exists():
        shutil.copyfile(src / "LICENSE", target)
    elif source in NO_LICENSE_NOTES:
        target.write_text(NO_LICENSE_NOTES[source], encoding="utf-8")
    else:
        raise FileNotFoundError(f"{src / 'LICENSE'} is missing and no note explains why")


def convert_all(shared: Path, out_dir: Path, assume_completion_tokens: int) -> None:
    prices = build_prices(shared)
    gsm8k_test = shared / "benchmarks" / "gsm8k" / "test.jsonl"
    options = {
        "assume_completion_tokens": assume_completion_tokens,
        "prices": prices,
        "gsm8k_test": gsm8k_test if gsm8k_test.exists() else None,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    # Staged beside the outputs (one file system, so each move is a rename): a source that
    # fails leaves every old file in out_dir as it was, prices.json included.
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".importing-") as tmp:
        staging = Path(tmp)
        write_prices(staging / "prices.json", prices)
        print(f"prices: {len(prices)} models -> {out_dir / 'prices.json'}")
        for source, (_, folder) in SOURCES.items():
            name = f"{source}.jsonl.gz"
            convert(source, shared / folder, staging / name, options, shown=out_dir / name)
            copy_license(source, shared / folder, staging)
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            target = out_dir / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m workers.importers", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", choices=[*SOURCES, "all"])
    parser.add_argument("--src", type=Path, help="the source's folder (one source)")
    parser.add_argument("--out", type=Path, help="the .jsonl.gz to write (one source)")
    parser.add_argument("--shared", type=Path, help="the shared data folder (all)")
    parser.add_argument("--out-dir", type=Path, help="the folder to write into (all)")
    parser.add_argument(
        "--assume-completion-tokens",
        type=int,
        default=llmrouter.DEFAULT_COMPLETION_TOKENS,
        help="completion length assumed where none was recorded (llmrouter)",
    )
    parser.add_argument("--prices", type=Path, help="a price table for sources without cost (one source)")
    parser.add_argument("--gsm8k-test", type=Path, help="GSM8K test.jsonl, for routellm's gold answers")
    args = parser.parse_args(argv)
    if args.assume_completion_tokens < 0:
        parser.error("--assume-completion-tokens must be >= 0")
    needed = ("shared", "out_dir") if args.source == "all" else ("src", "out")
    missing = [f"--{name.replace('_', '-')}" for name in needed if getattr(args, name) is None]
    if missing:
        parser.error(f"{args.source} needs {' and '.join(missing)}")
    # Every input folder is checked before anything is written: a wrong path must not
    # replace good outputs with empty ones.
    folders = [args.shared / folder for _, folder in SOURCES.values()] if args.source == "all" else [args.src]
    absent = [str(folder) for folder in folders if not folder.is_dir()]
    if absent:
        parser.error(f"no such folder: {', '.join(absent)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.source == "all":
            convert_all(args.shared, args.out_dir, args.assume_completion_tokens)
            return 0
        options = {
            "assume_completion_tokens": args.assume_completion_tokens,
            "prices": load_prices(args.prices),
            "gsm8k_test": args.gsm8k_test,
        }
        convert(args.source, args.src, args.out, options)
    except (ValueError, OSError) as error:  # the source data, not this code: one line, and the old output stays
        print(f"python -m workers.importers: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
