"""Composite tasks: decompose or delegate, scored and costed from the records alone.

    python -m orchestrator.evaluate_composite [--outcomes FILE ...] [--prices P] [--seeds 0,1,2]
        [--train-count 2000] [--test-count 1000] [--methods always_delegate,...,learned]
        [--learned-config CONFIG.json] [--penalty 0] [--sensitivity 0,0.05,0.1,0.2]
        [--planner MODEL] [--json OUT]

The options are `orchestrator.offline.composites.CompositesConfig`'s fields (the library this
wraps, whose docstring says how composites are drawn, scored and costed, and the two
assumptions every report repeats); --learned-config is a JSON file of the learned policy's
config, --sensitivity a comma-separated list of penalties, --json the report's file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator import cli
from orchestrator.errors import UsageError
from orchestrator.offline.composites import (
    DEFAULT_OUTCOMES,
    METHODS,
    CompositesConfig,
    OnProgress,
    evaluate_composites,
)


def add_draw_arguments(parser: argparse.ArgumentParser) -> None:
    """The outcome files, prices, seeds and composite counts, shared with `evaluate_rm_composite`."""
    parser.add_argument("--outcomes", nargs="+", type=Path, default=list(DEFAULT_OUTCOMES), help="outcome files")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first --outcomes file)")
    parser.add_argument("--seeds", type=cli.int_list, default=[0, 1, 2], help="comma-separated seeds")
    parser.add_argument("--train-count", type=cli.positive, default=2000, help="train composites per seed")
    parser.add_argument("--test-count", type=cli.positive, default=1000, help="test composites per seed")


def parse_args(
    argv: Sequence[str] | None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = parser_class(prog="python -m orchestrator.evaluate_composite", description=__doc__.split("\n\n")[0])
    add_draw_arguments(parser)
    parser.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}")
    parser.add_argument(
        "--learned-config", type=Path, help="JSON config of the learned policy (and its decompose head)"
    )
    parser.add_argument("--penalty", type=cli.finite, default=0.0, help="interference penalty per extra delegated part")
    parser.add_argument("--sensitivity", help="comma-separated penalties for the sensitivity table (e.g. 0,0.05,0.1)")
    parser.add_argument("--planner", help="the planner model (default: the cheapest priced one)")
    parser.add_argument("--json", type=Path, help="write the results here")
    return parser, parser.parse_args(argv)


def config_of(args: argparse.Namespace) -> CompositesConfig:
    """The library's config from the parsed options, the output path checked; UsageError names
    what cannot be used."""
    try:
        cli.check_output(args.json, "--json")
    except cli.INPUT_ERRORS as exc:
        raise UsageError(str(exc)) from None
    learned = cli.learned_config(args.learned_config)
    try:
        sensitivity = tuple(float(p) for p in (args.sensitivity or "").split(",") if p.strip())
    except ValueError:
        raise UsageError(f"--sensitivity takes comma-separated numbers, not {args.sensitivity!r}") from None
    return CompositesConfig(
        outcomes=tuple(args.outcomes),
        prices=args.prices,
        seeds=tuple(args.seeds),
        train_count=args.train_count,
        test_count=args.test_count,
        methods=tuple(n.strip() for n in args.methods.split(",") if n.strip()),
        learned=learned,
        penalty=args.penalty,
        sensitivity=sensitivity,
        planner=args.planner,
    )


def options(argv: Sequence[str]) -> tuple[CompositesConfig, Path | None]:
    """The config and the --json path of `argv`, for a caller that reports usage errors itself:
    UsageError, never an exit."""
    _, args = parse_args(argv, cli.RaisingParser)
    return config_of(args), args.json


def main(argv: Sequence[str] | None = None, on_progress: OnProgress | None = None) -> int:
    parser, args = parse_args(argv)
    try:
        result = evaluate_composites(config_of(args), on_progress)
    except UsageError as exc:
        parser.error(str(exc))
    print(result.text())
    if args.json is not None:
        args.json.write_text(json.dumps(result.to_json(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
