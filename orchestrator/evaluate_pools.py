"""Unseen pools: every router fit on some models and tested on models it never saw, over many splits.

    python -m orchestrator.evaluate_pools [--outcomes FILE ...] [--splits 5] [--k 10,25,50,100]
        [--seeds 0,1,2] [--methods learned,knn,cluster,mf,best_single,cascade] [--out RESULTS.jsonl]
        [--engine vectorized|core] [--learned-config C.json] [--max-train-items N] [--max-test-items N]

Users bring their own models, so the pool a router serves is always one it was not tuned
on. This measures that on the shipped tables, on many splits, so that no single split can
be tuned to:
- **models** splits: within a source of at least 8 models (RouterBench: 11, LLMRouter: 9),
  4 to 6 of its models, drawn with the split's number, are the unseen pool. Routers fit
  on the source's train-split items with its other models, plus every other source; they
  are tested on the source's test-split items, on the unseen models only. `--splits` per
  source.
- **source** splits (leave one source out): every model of the source is unseen; routers
  fit on the other sources, and are tested on all the source's items.

For each split and seed, K items of the test side are revealed with every unseen model's
outcome (the probe; they leave the test), for K in `--k`: the probes are nested (the 10 are
among the 25) and the test items are the same for every K. A method is fit once per split
and seed where it can be recalibrated on a new probe (the learned policy: its network is
trained on the train pool, then the probe is its calibration), else once per K.

Printed per K: each method's AIQ, mean ± sd over the splits (a split's figure is the mean of
its seeds), and in how many splits it is the best method. Each (split, seed, K, method) is
one line of `--out` (JSON lines), written as it finishes; a rerun with the same `--out`
skips what is there, so a long run can be stopped and resumed (with the same files, engine,
learned config and caps; other settings are refused: they need another `--out`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from orchestrator import cli
from orchestrator.evaluate import method_names
from orchestrator.evaluate_frontier import dominated_counts, preset_checks
from orchestrator.evaluate_pools_report import summarize
from orchestrator.evaluate_report import LEARNED, MethodResult, Setting
from orchestrator.offline.items import (
    METHOD_NAMES,
    add_frontier_metrics,
    anchors_of,
    make_method,
    run_method,
    single_pair_points,
    subsample,
)
from orchestrator.policies import COST_PRESETS
from orchestrator.routing.clean import without_seen
from orchestrator.routing.metrics import Point
from orchestrator.routing.table import OutcomeTable, default_prices, load_table, probe_split

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = (ROOT / "data" / "outcomes" / "routerbench.jsonl.gz", ROOT / "data" / "outcomes" / "llmrouter.jsonl.gz")
DEFAULT_METHODS = ("learned", "knn", "cluster", "mf", "best_single", "zero", "cascade")
MIN_MODELS = 8  # a source with fewer models gives no models split
HELD_OUT = (4, 6)  # unseen models per models split, drawn in this range


@dataclass(frozen=True)
class Split:
    """Which models are unseen: `kind` "models" (some of a source's) or "source" (all of them)."""

    name: str
    kind: str
    source: str
    unseen: tuple[str, ...]


def source_models(table: OutcomeTable) -> dict[str, list[str]]:
    """Each source's models, sorted."""
    found: dict[str, set[str]] = {}
    available = table.available()
    for j, (model, _) in enumerate(table.pairs):
        for source in {table.sources[i] for i in np.flatnonzero(available[:, j])}:
            found.setdefault(source, set()).add(model)
    return {source: sorted(models) for source, models in sorted(found.items())}


def draw_splits(table: OutcomeTable, per_source: int) -> list[Split]:
    """`per_source` models splits for each source with enough models, then one source split per source."""
    by_source = source_models(table)
    splits = []
    for source, models in by_source.items():
        if len(models) < MIN_MODELS:
            continue
        for n in range(per_source):
            rng = np.random.default_rng([n, len(models)])
            size = int(rng.integers(HELD_OUT[0], HELD_OUT[1] + 1))
            unseen = tuple(sorted(rng.choice(models, size=size, replace=False).tolist()))
            splits.append(Split(f"{source}/models-{n}", "models", source, unseen))
    if len(by_source) > 1:
        splits += [Split(f"{source}/source", "source", source, tuple(models)) for source, models in by_source.items()]
    return splits


def split_tables(table: OutcomeTable, split: Split) -> tuple[OutcomeTable, OutcomeTable]:
    """(train, test) for a split: test columns are the unseen models' pairs only, and no test
    item's text is a train item's (`routing.clean`)."""
    unseen = np.array([model in split.unseen for model, _ in table.pairs])
    sources = np.array(table.sources)
    if split.kind == "source":
        train_rows = np.flatnonzero(sources != split.source)
        test_rows = np.flatnonzero(sources == split.source)
    else:
        splits = np.array([s or "" for s in table.splits])
        own = sources == split.source
        train_rows = np.flatnonzero(~own | (splits == "train"))
        test_rows = np.flatnonzero(own & (splits == "test"))
    train = table.rows(train_rows).columns(np.flatnonzero(~unseen))
    test = table.rows(test_rows).columns(np.flatnonzero(unseen))
    train = train.rows(np.flatnonzero(train.available().any(axis=1)))
    test = test.rows(np.flatnonzero(test.available().any(axis=1)))
    return train, without_seen(test, train)


def nested_probes(test: OutcomeTable, ks: Sequence[int], seed: int) -> tuple[dict[int, OutcomeTable], OutcomeTable]:
    """({K: probe}, rest): the largest probe drawn as `probe_split` draws it, the smaller ones
    its seeded prefixes; the rest is the test for every K."""
    largest, rest = probe_split(test, k=max(ks), seed=seed)
    order = np.random.default_rng([seed, 1]).permutation(largest.n_items)
    return {k: largest.rows(np.sort(order[:k])) for k in ks}, rest


def evaluate_split(
    table: OutcomeTable, split: Split, seed: int, args: argparse.Namespace, done: set[tuple[str, int, int, str]]
) -> list[dict[str, Any]]:
    """One row per (K, method) not in `done`: the method's AIQ and best macro on this split and seed."""
    train, test = split_tables(table, split)
    train = subsample(train, args.max_train_items, seed=seed)
    test = subsample(test, args.max_test_items, seed=seed + 1)
    probes, test = nested_probes(test, args.k, seed)
    singles = single_pair_points(test)
    anchors = anchors_of(singles)
    cost_range = (min(c for c, _ in singles.values()), max(c for c, _ in singles.values()))
    rows = []
    results: dict[tuple[int, str], MethodResult] = {}
    for name in args.method_names:
        todo = [k for k in args.k if (split.name, seed, k, name) not in done]
        if not todo:
            continue
        method = make_method(name, args.learned_config, engine=args.engine)
        recalibrate = getattr(method, "calibrate", None)
        for n, k in enumerate(todo):
            setting = Setting(train, test, probes[k], f"{split.name}, K={k}")
            started = time.perf_counter()
            if recalibrate is not None and n > 0:
                recalibrate(probes[k])
                result = run_method(method, setting, seed, fitted=True)
            else:
                result = run_method(method, setting, seed)
            add_frontier_metrics(result, cost_range, anchors)
            results[(k, name)] = result
            best = max((p.macro_acc for p in result.points), default=float("nan"))
            cheap = cheap_end(result, probes[k], singles) if name == LEARNED else None
            rows.append(
                {"split": split.name, "kind": split.kind, "unseen": list(split.unseen), "seed": seed, "k": k,
                 "method": name, "aiq": result.aiq, "aiq_rb": result.aiq_rb, "best_macro": best,
                 "points": result.frontier(), "not_applicable": result.not_applicable,
                 "train_items": train.n_items, "test_items": test.n_items, "seconds": time.perf_counter() - started,
                 "strong": anchors.strong[1], "weak": anchors.weak[1], "cheap": cheap, "setup": args.setup,
                 "fit": {key: value for key, value in getattr(method, "metrics", {}).items()
                         if key.startswith(("holdout/", "time/fit"))}}
            )  # fmt: skip
    for k in {row["k"] for row in rows}:  # once every method of the split has run: who beats whom
        at_k = [result for (kk, _), result in results.items() if kk == k]
        beaten, presets = dominated_counts(at_k, singles), preset_checks(at_k, singles)
        for row in (row for row in rows if row["k"] == k):
            row["dominated"] = beaten.get(row["method"])
            if row["method"] == LEARNED:
                row["presets"] = presets
    return rows


def cheap_end(result: MethodResult, probe: OutcomeTable, singles: dict[str, Point]) -> dict[str, Any] | None:
    """The learned policy at the `cheap` preset against the cheap end of the pool: the cheapest
    model's accuracy, and the cost of the pair the probe shows best at the preset's λ (probe
    accuracy - λ · probe cost / the probe's most expensive pair), both on the test items."""
    lam = COST_PRESETS["cheap"]
    point = next((p for p in result.points if p.knob is not None and abs(p.knob - lam) < 1e-9), None)
    if point is None or not singles:
        return None
    known = probe.available()
    acc = np.array([probe.score[known[:, j], j].mean() if known[:, j].any() else 0.0 for j in range(probe.n_pairs)])
    cost = np.array([probe.cost[known[:, j], j].mean() if known[:, j].any() else np.inf for j in range(probe.n_pairs)])
    utility = acc - lam * cost / max(float(cost[np.isfinite(cost)].max(initial=0.0)), 1e-12)
    model, primitive = probe.pairs[int(np.argmax(utility))]
    chosen = model if primitive == "direct" else f"{model}/{primitive}"
    return {
        "macro": point.macro_acc, "cost": point.cost_per_query, "cheapest_macro": anchors_of(singles).weak[1],
        "probe_pair": chosen, "probe_pair_cost": singles[chosen][0] if chosen in singles else None,
    }  # fmt: skip


def read_done(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                raise ValueError(f"{path}:{number}: not a JSON line (a results file of this command?)") from None
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
    parser.add_argument(
        "--engine", choices=("vectorized", "core"), default="vectorized",
        help="the learned method's items: batched episodes (default; they decide as the core does), or core runs",
    )  # fmt: skip
    parser.add_argument("--max-train-items", type=cli.positive, help="fit on a seeded subset of this many items")
    parser.add_argument("--max-test-items", type=cli.positive, help="test on a seeded subset of this many items")
    args = parser.parse_args(argv)
    given = [args.prices, args.learned_config]
    for path in [*args.outcomes, *(path for path in given if path is not None)]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    if not args.k or min(args.k) < 1:
        parser.error("--k must list probe sizes of at least 1 item")
    args.k = sorted(set(args.k))
    args.method_names = method_names(parser, args.methods)
    return parser, args


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse_args(argv)
    prices = default_prices(args.outcomes, args.prices)
    try:
        cli.check_output(args.out, "--out")
        args.learned_config = cli.read_config(args.learned_config, "--learned-config")
        previous = read_done(args.out)
        table = load_table(args.outcomes, prices=prices)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    args.setup = {
        "outcomes": [path.name for path in args.outcomes], "engine": args.engine, "learned": args.learned_config,
        "max_train_items": args.max_train_items, "max_test_items": args.max_test_items,
    }  # fmt: skip
    other = next((row.get("setup") for row in previous if row.get("setup") != args.setup), None)
    if previous and other is not None:
        parser.error(f"{args.out} holds results made otherwise ({other}): give another --out")
    splits = draw_splits(table, args.splits)
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        missing = wanted - {split.name for split in splits}
        if missing:
            names = ", ".join(s.name for s in splits)
            parser.error(f"no such split: {', '.join(sorted(missing))}; the splits are {names}")
        splits = [split for split in splits if split.name in wanted]
    if not splits:
        parser.error("no split: give sources with at least 8 models, or two sources or more")
    for split in splits:
        print(f"{split.name}: unseen {', '.join(split.unseen)}")
    if {"learned", "knn", "cluster", "mf", "cascade"} & set(args.method_names):
        from orchestrator.embedding import embed

        print(f"embedding {table.n_items} prompts (cached per text)", file=sys.stderr)
        embed(table.prompts, progress=True)
    rows = list(previous)
    done = {(r["split"], r["seed"], r["k"], r["method"]) for r in rows}
    cells = [(split, seed) for split in splits for seed in args.seeds]
    for split, seed in tqdm(cells, desc="splits x seeds", file=sys.stderr):
        fresh = evaluate_split(table, split, seed, args, done)
        rows += fresh
        if args.out is not None and fresh:
            with args.out.open("a") as out:
                out.writelines(json.dumps(row) + "\n" for row in fresh)
    wanted_splits = {split.name for split in splits}
    kept = [r for r in rows if r["split"] in wanted_splits and r["seed"] in args.seeds]
    print(summarize(kept, args.method_names, args.k))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
