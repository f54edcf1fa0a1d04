"""Offline evaluation of routers on recorded outcomes: the learned policy and every baseline, side by side.

    python -m orchestrator.evaluate --outcomes FILE [FILE ...] [--train FILE ...] [--probe K]
        [--seed S] [--json OUT.json] [--plot OUT.png] [--methods a,b,...] [--prices P]
        [--max-train-items N] [--max-test-items N] [--checkpoint POLICY.pt]

The options are `orchestrator.offline.items.ItemsConfig`'s fields (the library this wraps,
whose docstring says what each does); --learned-config is a JSON file of the learned
method's config. --json writes the report, --plot the Pareto plot (PNG).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from orchestrator import cli
from orchestrator.errors import UsageError
from orchestrator.offline.items import (
    METHOD_NAMES,
    ItemsConfig,
    OnProgress,
    check_methods,
    evaluate_setting,
    prepare,
)


def parse_args(
    argv: Sequence[str] | None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = parser_class(prog="python -m orchestrator.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", nargs="+", required=True, type=Path, help="outcome files to test on")
    parser.add_argument("--train", nargs="+", type=Path, help="outcome files to fit on (else split --outcomes)")
    parser.add_argument("--probe", type=int, default=0, help="items of an unseen pool revealed for calibration")
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--plot", type=Path, help="write the Pareto plot (PNG) here")
    parser.add_argument("--methods", help=f"comma-separated subset of: {','.join(METHOD_NAMES)}")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first --outcomes file)")
    parser.add_argument("--learned-config", type=Path, help="JSON config for the learned policy")
    parser.add_argument("--max-train-items", type=int, help="fit on a seeded random subset of this many train items")
    parser.add_argument("--max-test-items", type=int, help="test on a seeded random subset of this many test items")
    parser.add_argument("--checkpoint", type=Path, help="the learned policy: this trained checkpoint, not one fit here")
    args = parser.parse_args(argv)
    args.method_names = METHOD_NAMES if args.methods is None else method_names(parser, args.methods)
    return parser, args


def method_names(parser: argparse.ArgumentParser, text: str) -> tuple[str, ...]:
    """`--methods a,b`: known method names, else a one-line usage error."""
    try:
        return check_methods([n.strip() for n in text.split(",") if n.strip()])
    except UsageError as exc:
        parser.error(str(exc))


def config_of(args: argparse.Namespace) -> ItemsConfig:
    """The library's config from the parsed options, the output paths checked; UsageError names
    what cannot be used."""
    try:
        cli.check_output(args.json, "--json")
        cli.check_output(args.plot, "--plot")
    except cli.INPUT_ERRORS as exc:
        raise UsageError(str(exc)) from None
    learned = cli.learned_config(args.learned_config)
    return ItemsConfig(
        outcomes=tuple(args.outcomes),
        train=tuple(args.train) if args.train is not None else None,
        probe=args.probe,
        seed=args.seed,
        methods=args.method_names,
        prices=args.prices,
        learned=learned,
        max_train_items=args.max_train_items,
        max_test_items=args.max_test_items,
        checkpoint=args.checkpoint,
    )


def options(argv: Sequence[str]) -> tuple[ItemsConfig, Path | None, Path | None]:
    """The config and the --json and --plot paths of `argv`, for a caller that reports usage
    errors itself: UsageError, never an exit."""
    _, args = parse_args(argv, cli.RaisingParser)
    return config_of(args), args.json, args.plot


def main(argv: Sequence[str] | None = None, on_progress: OnProgress | None = None) -> int:
    parser, args = parse_args(argv)
    try:
        config = config_of(args)
        setting = prepare(config)
    except UsageError as exc:
        parser.error(str(exc))
    sizes = f"{setting.train.n_items} train items, {setting.test.n_items} test items, {setting.test.n_pairs} pairs"
    print(f"{setting.description}: {sizes}")
    result = evaluate_setting(config, setting, on_progress)
    for name, reason in result.unavailable.items():
        print(f"{name}: not available ({reason})")
    for line in result.lines():
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result.to_json(), indent=1, allow_nan=False))
    if args.plot:
        result.plot(args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
