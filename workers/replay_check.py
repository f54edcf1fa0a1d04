"""Replay every recorded outcome through litellm `replay/<model>` and compare with the record.

    python -m workers.replay_check data/outcomes/*.jsonl.gz

For each record it calls litellm.completion("replay/<model>", ...) with the record's
primitive and item id, and checks that the response text, the recorded score and the
cost come back unchanged. It prints the records, the mismatches (which must be 0) and
the recorded and replayed cost totals, and exits 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

import litellm
from tqdm import tqdm

from orchestrator.outcomes import OutcomeFormatError, OutcomeRecord, read_outcomes
from providers import replay


def replay_one(record: OutcomeRecord) -> tuple[list[str], float | None]:
    """The fields that differ between the record and its replay, and the replayed cost."""
    response = litellm.completion(
        model=f"replay/{record.model}",
        messages=[{"role": "user", "content": record.prompt}],
        metadata={"primitive": record.primitive, "item_id": record.item_id},
    )
    recording = response._hidden_params.get("replay") or {}
    cost = response._hidden_params.get("response_cost")
    problems = []
    if (response.choices[0].message.content or None) != (record.response or None):
        problems.append("response")
    if recording.get("score") != record.score:
        problems.append("score")
    if (cost is None) != (record.cost_usd is None) or (
        cost is not None and record.cost_usd is not None and not math.isclose(cost, record.cost_usd, abs_tol=1e-12)
    ):
        problems.append("cost")
    return problems, cost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.replay_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            parser.error(f"no such file: {path}")

    print(f"Checking {len(args.files)} file(s)…", file=sys.stderr)
    exit_code = 0
    for path in args.files:
        try:
            records = list(read_outcomes(path))
        except OutcomeFormatError as error:
            parser.error(str(error))
        replay.install(replay.MemoryStore(records))
        mismatches: Counter[str] = Counter()
        recorded_cost = replayed_cost = 0.0
        for record in tqdm(records, desc=path.name, unit="rec", disable=args.no_progress, file=sys.stderr):
            problems, cost = replay_one(record)
            mismatches.update(problems)
            if problems:
                mismatches["records"] += 1
            recorded_cost += record.cost_usd or 0.0
            replayed_cost += cost or 0.0
        costless = sum(1 for record in records if record.cost_usd is None)
        detail = ", ".join(f"{field} {n}" for field, n in sorted(mismatches.items()) if field != "records")
        print(
            f"{path.name}: {len(records):,} records, {mismatches['records']:,} mismatches"
            + (f" ({detail})" if detail else "")
            + f"; cost recorded ${recorded_cost:,.2f}, replayed ${replayed_cost:,.2f}"
            + (f"; {costless:,} records have no recorded cost" if costless else "")
        )
        if mismatches["records"] or round(recorded_cost, 2) != round(replayed_cost, 2):
            exit_code = 1
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
