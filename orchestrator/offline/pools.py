"""Unseen pools as a library: every router fit on some models and tested on models it never
saw, over many splits. `evaluate_pools(config, progress, done) -> PoolsReport`; a config that
cannot be used raises `UsageError` naming the option. `python -m orchestrator.evaluate_pools`
wraps it (and keeps its results file).

Users bring their own models, so the pool a router serves is always one it was not tuned
on. This measures that on the shipped tables, on many splits, so that no single split can
be tuned to:
- **models** splits: within a source of at least 8 models (RouterBench: 11, LLMRouter: 9),
  4 to 6 of its models, drawn with the split's number, are the unseen pool. Routers fit
  on the source's train-split items with its other models, plus every other source; they
  are tested on the source's test-split items, on the unseen models only. `splits` per
  source.
- **source** splits (leave one source out): every model of the source is unseen; routers
  fit on the other sources, and are tested on all the source's items.

For each split and seed, K items of the test side are revealed with every unseen model's
outcome (the probe; they leave the test), for K in `k`: the probes are nested (the 10 are
among the 25) and the test items are the same for every K. A method is fit once per split
and seed where it can be recalibrated on a new probe (the learned policy: its network is
trained on the train pool, then the probe is its calibration), else once per K.

`PoolsReport.text()` is, per K, each method's AIQ, mean ± sd over the splits (a split's figure
is the mean of its seeds), and in how many splits it is the best method. Each (split, seed,
K, method) is one row; rows in `done` are not run again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from orchestrator.errors import UsageError
from orchestrator.evaluate_frontier import dominated_counts, preset_checks
from orchestrator.evaluate_pools_report import summarize
from orchestrator.evaluate_report import LEARNED, MethodResult, Setting
from orchestrator.offline.items import (
    EMBEDDED,
    add_frontier_metrics,
    anchors_of,
    check_common,
    make_method,
    run_method,
    single_pair_points,
    subsample,
)
from orchestrator.policies import COST_PRESETS
from orchestrator.routing.clean import without_seen
from orchestrator.routing.metrics import Point
from orchestrator.routing.table import OutcomeTable, default_prices, load_table, probe_split

ROOT = Path(__file__).resolve().parents[2]
OUTCOMES = (ROOT / "data" / "outcomes" / "routerbench.jsonl.gz", ROOT / "data" / "outcomes" / "llmrouter.jsonl.gz")
DEFAULT_METHODS = ("learned", "knn", "cluster", "mf", "best_single", "zero", "cascade")
MIN_MODELS = 8  # a source with fewer models gives no models split
HELD_OUT = (4, 6)  # unseen models per models split, drawn in this range


@dataclass(frozen=True)
class PoolsConfig:
    """What to evaluate; the module's docstring says how the splits and probes are drawn."""

    outcomes: tuple[Path, ...] = OUTCOMES
    splits: int = 5  # models splits per source
    k: tuple[int, ...] = (10, 25, 50, 100)  # probe sizes
    seeds: tuple[int, ...] = (0, 1, 2)
    methods: tuple[str, ...] = DEFAULT_METHODS
    only: tuple[str, ...] = ()  # split names to run (as `draw_splits` names them); all where empty
    prices: Path | None = None
    learned: Mapping[str, Any] | None = None  # the learned method's config (`LearnedConfig`)
    max_train_items: int | None = None
    max_test_items: int | None = None

    @property
    def setup(self) -> dict[str, Any]:
        """What a row's figures depend on beyond its split, seed, K and method: rows made
        otherwise are not comparable."""
        return {
            "outcomes": [path.name for path in self.outcomes], "learned": self.learned,
            "max_train_items": self.max_train_items, "max_test_items": self.max_test_items,
        }  # fmt: skip


def check(config: PoolsConfig) -> PoolsConfig:
    """The config with its K sorted; UsageError for the first thing that cannot be used."""
    for path in [*config.outcomes, *([config.prices] if config.prices else [])]:
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
    if not config.k or min(config.k) < 1:
        raise UsageError("--k must list probe sizes of at least 1 item")
    if not config.seeds:
        raise UsageError("--seeds needs at least one seed")
    if config.splits < 0:
        raise UsageError("--splits must be 0 or more")
    check_common(config.max_train_items, config.max_test_items, config.methods)
    return PoolsConfig(**{**config.__dict__, "k": tuple(sorted(set(config.k)))})


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
    table: OutcomeTable, split: Split, seed: int, config: PoolsConfig, done: set[tuple[str, int, int, str]]
) -> list[dict[str, Any]]:
    """One row per (K, method) not in `done`: the method's AIQ and best macro on this split and seed."""
    train, test = split_tables(table, split)
    train = subsample(train, config.max_train_items, seed=seed)
    test = subsample(test, config.max_test_items, seed=seed + 1)
    probes, test = nested_probes(test, config.k, seed)
    singles = single_pair_points(test)
    anchors = anchors_of(singles)
    cost_range = (min(c for c, _ in singles.values()), max(c for c, _ in singles.values()))
    rows: list[dict[str, Any]] = []
    results: dict[tuple[int, str], MethodResult] = {}
    for name in config.methods:
        todo = [k for k in config.k if (split.name, seed, k, name) not in done]
        if not todo:
            continue
        method = make_method(name, config.learned)
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
                 "fit_s": result.fit_s, "route_s": result.route_s,
                 "strong": anchors.strong[1], "weak": anchors.weak[1], "cheap": cheap, "setup": config.setup,
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


def chosen_splits(table: OutcomeTable, config: PoolsConfig) -> list[Split]:
    """The splits `config` asks for; UsageError names one that does not exist, or says why there are none."""
    splits = draw_splits(table, config.splits)
    if config.only:
        missing = set(config.only) - {split.name for split in splits}
        if missing:
            names = ", ".join(s.name for s in splits)
            raise UsageError(f"no such split: {', '.join(sorted(missing))}; the splits are {names}")
        splits = [split for split in splits if split.name in config.only]
    if not splits:
        raise UsageError("no split: give sources with at least 8 models, or two sources or more")
    return splits


@dataclass
class PoolsReport:
    """Every (split, seed, K, method) row asked for, those given as done included."""

    config: PoolsConfig
    splits: list[Split]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def text(self) -> str:
        """Per K, each method's AIQ over the splits and how often it is the best."""
        return summarize(self.rows, list(self.config.methods), list(self.config.k))


def foreign_setup(config: PoolsConfig, rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The setup of a row made otherwise than `config` would make it, if any. A row's `engine`
    (rows made before the batched core: `vectorized` or `core`, which decided alike) is not
    part of it."""
    setups = ({k: v for k, v in row["setup"].items() if k != "engine"} for row in rows if row.get("setup"))
    return next((setup for setup in setups if setup != config.setup), None)


def evaluate_pools(
    config: PoolsConfig,
    progress: Callable[[int, int, str], None] | None = None,
    done: Iterable[dict[str, Any]] = (),
    on_rows: Callable[[list[dict[str, Any]]], None] | None = None,
    on_splits: Callable[[list[Split]], None] | None = None,
) -> PoolsReport:
    """Run every split x seed of `config`, less the rows in `done` (which must have been made with
    the same `setup`). `on_splits(splits)` once they are drawn, `progress(done, total, split)`
    before each split x seed, `on_rows(rows)` as each finishes."""
    config = check(config)
    previous = list(done)
    other = foreign_setup(config, previous)
    if other is not None:
        raise UsageError(f"the results given hold rows made otherwise ({other})")
    try:
        table = load_table(list(config.outcomes), prices=default_prices(list(config.outcomes), config.prices))
    except OSError as exc:
        raise UsageError(f"cannot read the outcome files: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    splits = chosen_splits(table, config)
    if on_splits is not None:
        on_splits(splits)
    if set(EMBEDDED) & set(config.methods):
        from orchestrator.embedding import embed

        print(f"embedding {table.n_items} prompts (cached per text)", file=sys.stderr)
        embed(table.prompts, progress=True)
    rows = list(previous)
    finished = {(r["split"], r["seed"], r["k"], r["method"]) for r in rows}
    cells = [(split, seed) for split in splits for seed in config.seeds]
    for n, (split, seed) in enumerate(tqdm(cells, desc="splits x seeds", file=sys.stderr)):
        if progress is not None:
            progress(n, len(cells), f"{split.name}, seed {seed}")
        fresh = evaluate_split(table, split, seed, config, finished)
        rows += fresh
        if on_rows is not None and fresh:
            on_rows(fresh)
    if progress is not None:
        progress(len(cells), len(cells), "")
    names = {split.name for split in splits}
    return PoolsReport(config, splits, [r for r in rows if r["split"] in names and r["seed"] in config.seeds])
