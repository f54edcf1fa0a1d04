"""Unseen pools: every router fit on some models and tested on models it never saw, over many splits.

    python -m orchestrator.evaluate_pools [--outcomes FILE ...] [--splits 5] [--k 10,25,50,100]
        [--seeds 0,1,2] [--methods learned,knn,cluster,mf,best_single,cascade] [--out RESULTS.jsonl]
        [--learned-config C.json] [--max-train-items N] [--max-test-items N]

How the splits and probes are drawn, and what is fit on what: the library this wraps,
`orchestrator.offline.pools` (its docstring). `--splits` is models splits per source, `--k`
the probe sizes.

Printed per K: each method's AIQ, mean ± sd over the splits (a split's figure is the mean of
its seeds), and in how many splits it is the best method. Each (split, seed, K, method) is
one line of `--out` (JSON lines), written as it finishes; a rerun with the same `--out`
skips what is there, so a long run can be stopped and resumed (with the same files,
learned config and caps; other settings are refused: they need another `--out`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator import cli
from orchestrator.errors import UsageError
from orchestrator.evaluate import method_names
from orchestrator.offline.items import METHOD_NAMES
from orchestrator.offline.pools import DEFAULT_METHODS, OUTCOMES, PoolsConfig, Split, evaluate_pools, foreign_setup


def read_done(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                raise UsageError(f"{path}:{number}: not a JSON line (a results file of this command?)") from None
    return rows


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.evaluate_pools", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--outcomes", nargs="+", type=Path, default=list(OUTCOMES), help="the sources (default: RouterBench, LLMRouter)"
    )
    parser.add_argument("--splits", type=cli.non_negative, default=5, help="models splits per source (default 5)")
    parser.add_argument("--k", type=cli.int_list, default=[10, 25, 50, 100], help="probe sizes (default 10,25,50,100)")
    parser.add_argument("--seeds", type=cli.int_list, default=[0, 1, 2], help="seeds per split (default 0,1,2)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS), help=f"subset of: {','.join(METHOD_NAMES)}")
    parser.add_argument("--only", help="comma-separated split names to run (as printed), e.g. routerbench/models-0")
    parser.add_argument("--out", type=Path, help="results as JSON lines; a rerun skips what is there")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first --outcomes file)")
    parser.add_argument("--learned-config", type=Path, help="JSON config for the learned policy")
    parser.add_argument("--max-train-items", type=cli.positive, help="fit on a seeded subset of this many items")
    parser.add_argument("--max-test-items", type=cli.positive, help="test on a seeded subset of this many items")
    args = parser.parse_args(argv)
    args.method_names = method_names(parser, args.methods)
    return parser, args


def config_of(args: argparse.Namespace) -> PoolsConfig:
    """The library's config from the parsed options; UsageError names what cannot be used (the
    library checks the rest)."""
    learned = cli.learned_config(args.learned_config)
    return PoolsConfig(
        outcomes=tuple(args.outcomes),
        splits=args.splits,
        k=tuple(args.k),
        seeds=tuple(args.seeds),
        methods=args.method_names,
        only=tuple(name.strip() for name in (args.only or "").split(",") if name.strip()),
        prices=args.prices,
        learned=learned,
        max_train_items=args.max_train_items,
        max_test_items=args.max_test_items,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse_args(argv)
    try:
        cli.check_output(args.out, "--out")
        config = config_of(args)
        previous = read_done(args.out)
    except (UsageError, *cli.INPUT_ERRORS) as exc:
        parser.error(str(exc))
    other = foreign_setup(config, previous)
    if other is not None:
        parser.error(f"{args.out} holds results made otherwise ({other}): give another --out")

    def keep(rows: list[dict[str, Any]]) -> None:
        if args.out is not None:
            with args.out.open("a") as out:
                out.writelines(json.dumps(row) + "\n" for row in rows)

    try:
        result = evaluate_pools(config, done=previous, on_rows=keep, on_splits=print_splits)
    except UsageError as exc:
        parser.error(str(exc))
    print(result.text())
    return 0


def print_splits(splits: Sequence[Split]) -> None:
    for split in splits:
        print(f"{split.name}: unseen {', '.join(split.unseen)}")


if __name__ == "__main__":
    raise SystemExit(main())
