"""The item evaluation as a library: the learned policy and every baseline on recorded outcomes,
side by side. `evaluate_items(config, progress) -> ItemsReport`; a config that cannot be used
raises `UsageError`, its message naming the option. `python -m orchestrator.evaluate` and the
studio's evaluation jobs both call it.

- With only `outcomes`: split by item (the upstream split where every item has one, else a
  seeded 80/20), fit every method on train, report on test.
- With `train`: fit on those files and test on `outcomes`. Where the `outcomes` pool has
  pairs that `train` lacks, `probe` K reveals K items of it (all their pairs) for
  calibration, to every method alike; those items leave the test set.
- `max_train_items` / `max_test_items` keep a seeded random subset of that many items of each
  side (after the split and the probe), for a quick run.
- `checkpoint`: the learned policy is that trained checkpoint, with the calibration it carries,
  instead of one fitted here.

The learned method plays every test item as a run of the orchestration core
(`orchestrator.offline.shell.run_many`: all the items in lockstep, its network asked once per
round for all of them), so its decisions are a live run's.

Every method is scored on the same test items by `orchestrator.routing.metrics`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from orchestrator.baselines import BASELINES
from orchestrator.errors import UsageError
from orchestrator.evaluate_frontier import dominated_counts, frontier_lines, preset_checks
from orchestrator.evaluate_report import LEARNED, MethodResult, PointResult, Setting, finite, format_table, plot, report
from orchestrator.outcomes import read_prices
from orchestrator.routing import metrics
from orchestrator.routing.clean import without_seen
from orchestrator.routing.methods import Method, NotApplicable
from orchestrator.routing.table import OutcomeTable, default_prices, load_table, probe_split, split_table

METHOD_NAMES = (LEARNED, *BASELINES)
EMBEDDED = ("knn", "cluster", "mf", "cascade", LEARNED)  # the methods that read the prompts' embeddings

# on_progress(done, total, method): called before each method is fitted (done = methods
# finished so far) and once more at the end with done == total and method "".
OnProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ItemsConfig:
    """What to evaluate; the module's docstring says what each field does."""

    outcomes: tuple[Path, ...]
    train: tuple[Path, ...] | None = None
    probe: int = 0
    seed: int = 0
    methods: tuple[str, ...] = METHOD_NAMES
    prices: Path | None = None
    learned: Mapping[str, Any] | None = None  # the learned method's config (`LearnedConfig`)
    max_train_items: int | None = None
    max_test_items: int | None = None
    checkpoint: Path | None = None


def check_methods(names: Sequence[str]) -> tuple[str, ...]:
    """Known method names, in the order given; UsageError names the unknown ones."""
    names = tuple(names)
    unknown = [n for n in names if n not in METHOD_NAMES]
    if unknown or not names:
        raise UsageError(
            f"unknown method(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHOD_NAMES)}"
        )
    return names


def check_common(max_train_items: int | None, max_test_items: int | None, methods: Sequence[str]) -> None:
    """What the item and the pool evaluations both take: the item caps and the methods."""
    for flag, cap in (("--max-train-items", max_train_items), ("--max-test-items", max_test_items)):
        if cap is not None and cap < 1:
            raise UsageError(f"{flag} must be a positive number of items")
    check_methods(methods)


def check(config: ItemsConfig) -> None:
    """UsageError for the first thing in `config` that cannot be used, before any work starts."""
    for path in [*config.outcomes, *(config.train or ()), *([config.prices] if config.prices else [])]:
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
    if config.checkpoint is not None and not config.checkpoint.is_file():
        raise UsageError(f"no such file: {config.checkpoint}")
    if config.probe < 0:
        raise UsageError("--probe must be a non-negative number of items")
    if config.probe and config.train is None:
        raise UsageError("--probe needs --train: it calibrates on an unseen pool")
    check_common(config.max_train_items, config.max_test_items, config.methods)
    if config.checkpoint is not None:
        check_checkpoint(config.checkpoint)
    if LEARNED in config.methods:  # checked now, not after the embedding
        from orchestrator.learning.method import LearnedConfig

        try:
            prices_file = LearnedConfig.from_mapping(config.learned).prices
            if prices_file:
                read_prices(prices_file)
        except UsageError:
            raise
        except ValueError as exc:  # the config's or the prices file's own message
            raise UsageError(str(exc)) from None


def check_checkpoint(path: Path) -> None:
    """A checkpoint the learned method can use: a policy checkpoint carrying its calibration."""
    from orchestrator.learning.model import checkpoint_file_facts

    try:
        _, calibration = checkpoint_file_facts(path)
    except Exception as exc:  # torch.load raises many kinds
        raise UsageError(f"--checkpoint {path} cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not calibration:
        raise UsageError(f"--checkpoint {path} carries no calibration (trained before checkpoints did): train it again")


def prepare(config: ItemsConfig) -> Setting:
    """Check the config, load the tables, make the split it describes, then apply the item caps."""
    check(config)
    try:
        setting = split_setting(config, default_prices(list(config.outcomes), config.prices))
    except OSError as exc:
        raise UsageError(f"cannot read the outcome files: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    train = subsample(setting.train, config.max_train_items, seed=config.seed)
    test = subsample(setting.test, config.max_test_items, seed=config.seed + 1)
    if test.n_items == 0:
        raise UsageError("no test item has a pair with a known score and cost")
    if train is setting.train and test is setting.test:
        return setting
    how = f"{setting.description}; capped at {train.n_items} train and {test.n_items} test items (seed {config.seed})"
    return Setting(train, test, setting.probe, how)


def subsample(table: OutcomeTable, cap: int | None, *, seed: int) -> OutcomeTable:
    """A seeded random `cap` items of the table, in their original order; the table itself when it is no larger."""
    if cap is None or table.n_items <= cap:
        return table
    keep = np.sort(np.random.default_rng(seed).choice(table.n_items, size=cap, replace=False))
    return table.rows(keep)


def split_setting(config: ItemsConfig, prices: Path | None) -> Setting:
    outcomes = load_table(list(config.outcomes), prices=prices)
    if config.train is None:
        train, test = split_table(outcomes, seed=config.seed)
        upstream = {"train", "test"} == set(outcomes.splits)
        how = "upstream split" if upstream else f"seeded 80/20 split (seed {config.seed})"
        return Setting(train, drop_unroutable(test), None, how)

    train = load_table(list(config.train), prices=prices)
    if not train.n_items:
        raise UsageError(f"--train {' '.join(map(str, config.train))}: no records to fit on")
    seen = set(train.keys())
    fresh = [i for i, key in enumerate(outcomes.keys()) if key not in seen]
    test = without_seen(outcomes.rows(fresh), train)  # and by text: two sources share no keys
    if not test.n_items:
        raise UsageError("every --outcomes item is also in --train (by key or text): nothing is left to test on")
    test = drop_unroutable(test)
    if test.pairs == train.pairs and not config.probe:
        return Setting(train, test, None, "train on --train, test on --outcomes (same pool)")
    if not config.probe:
        raise UsageError("the --outcomes pairs differ from --train's: pass --probe K to calibrate on K items")
    probe, test = probe_split(test, k=config.probe, seed=config.seed)
    unseen = sorted({m for m, _ in test.pairs} - {m for m, _ in train.pairs})
    how = f"train on --train, test on --outcomes, {config.probe} probe items ({len(unseen)} unseen models)"
    return Setting(train, test, probe, how)


def drop_unroutable(table: OutcomeTable) -> OutcomeTable:
    """Items with no available pair (no recording with a known cost) cannot be routed; leave them out."""
    keep = np.flatnonzero(table.available().any(axis=1))
    if len(keep) < table.n_items:
        print(f"left out {table.n_items - len(keep)} test items with no pair of known cost", file=sys.stderr)
    return table.rows(keep)


def single_pair_points(test: OutcomeTable) -> dict[str, metrics.Point]:
    """(cost per query, macro pass@1) of always calling one pair, over the test items where it is available."""
    available = test.available()
    points: dict[str, metrics.Point] = {}
    for j, (model, primitive) in enumerate(test.pairs):
        rows = np.flatnonzero(available[:, j])
        if len(rows) == 0:
            continue
        benchmarks = [test.benchmarks[i] for i in rows]
        name = model if primitive == "direct" else f"{model}/{primitive}"
        points[name] = (float(test.cost[rows, j].mean()), metrics.macro_accuracy(test.score[rows, j], benchmarks))
    return points


def anchors_of(singles: dict[str, metrics.Point]) -> metrics.Anchors:
    """Weak = the cheapest single pair, strong = the most accurate (the cheaper of equals)."""
    weak = min(singles.values(), key=lambda p: (p[0], -p[1]))
    strong = max(singles.values(), key=lambda p: (p[1], -p[0]))
    return metrics.Anchors(weak=weak, strong=strong)


def make_method(name: str, learned_config: Mapping[str, Any] | None, checkpoint: Path | None = None) -> Method:
    if name == LEARNED:
        from orchestrator.learning.method import LearnedMethod  # lazy: torch training code

        method: Method = LearnedMethod(dict(learned_config or {}), checkpoint=checkpoint)
        return method
    return BASELINES[name]()


def run_method(method: Method, setting: Setting, seed: int, *, fitted: bool = False) -> MethodResult:
    """Fit once (unless `fitted`), route the test items at every knob, score each point."""
    result = MethodResult(name=method.name)
    start = time.perf_counter()
    try:
        if not fitted:
            method.fit(setting.train, seed=seed, probe=setting.probe)
    except NotApplicable as exc:
        result.not_applicable = str(exc)
        return result
    result.fit_s = time.perf_counter() - start
    start = time.perf_counter()
    test = setting.test
    knobs: Sequence[float | None] = method.knobs or (None,)
    for knob in knobs:
        outcome = metrics.score_routes(test, method.route(test, knob=knob))
        result.points.append(
            PointResult(
                knob=knob,
                macro_acc=metrics.macro_accuracy(outcome.score, test.benchmarks),
                cost_per_query=metrics.cost_per_query(outcome.cost),
                calls_per_query=float(outcome.calls.mean()),
                per_domain=metrics.group_accuracy(outcome.score, test.domains),
                per_benchmark=metrics.group_accuracy(outcome.score, test.benchmarks),
                violations=outcome.violations,
            )
        )
    result.route_s = time.perf_counter() - start
    return result


def add_frontier_metrics(result: MethodResult, cost_range: tuple[float, float], anchors: metrics.Anchors) -> None:
    if not result.points:
        return
    points = result.frontier()
    result.aiq = metrics.aiq(points, cost_range)
    result.aiq_rb = metrics.aiq_routerbench(points, cost_range[1])
    result.apgr = metrics.apgr(points, anchors)
    result.cpt50 = metrics.cpt(points, anchors, 0.5)
    result.cpt80 = metrics.cpt(points, anchors, 0.8)


@dataclass
class ItemsReport:
    """Every method's points and frontier metrics on one setting, with the single pairs they
    are held against."""

    config: ItemsConfig
    setting: Setting
    results: list[MethodResult]
    singles: dict[str, metrics.Point]
    unavailable: dict[str, str] = field(default_factory=dict)  # method -> why it could not run
    embed_s: float = 0.0  # seconds spent embedding the prompts (0 where they were cached)

    def __post_init__(self) -> None:
        self.anchors = anchors_of(self.singles)
        costs = [c for c, _ in self.singles.values()]
        self.cost_range = (min(costs), max(costs))
        for result in self.results:
            add_frontier_metrics(result, self.cost_range, self.anchors)
        self.dominated = dominated_counts(self.results, self.singles)
        self.presets = preset_checks(self.results, self.singles)
        self.weak = next(n for n, p in self.singles.items() if p == self.anchors.weak)
        self.strong = next(n for n, p in self.singles.items() if p == self.anchors.strong)

    def lines(self) -> list[str]:
        """The table, the anchors, and the frontier checks, as the CLI prints them."""
        anchors = self.anchors
        return [
            format_table(self.results, sorted(set(self.setting.test.domains))),
            f"anchors: weak {self.weak} ({anchors.weak[1]:.3f} at ${anchors.weak[0]:.2e}), "
            f"strong {self.strong} ({anchors.strong[1]:.3f} at ${anchors.strong[0]:.2e}); "
            f"AIQ over ${self.cost_range[0]:.2e}..${self.cost_range[1]:.2e}; CPT in % of the strong pair's cost",
            *frontier_lines(self.results, self.dominated, self.presets),
            self.time_line(),
        ]

    def time_line(self) -> str:
        """Where the time went: embedding, then each method's fitting and routing."""
        parts = [f"embedding {self.embed_s:.1f} s"]
        for r in self.results:
            split = f" (fit {r.fit_s:.1f}, routing {r.route_s:.1f})" if r.name == LEARNED else ""
            parts.append(f"{r.name} {r.fit_s + r.route_s:.1f} s{split}")
        total = self.embed_s + sum(r.fit_s + r.route_s for r in self.results)
        return f"time: {total:.1f} s; " + ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The JSON report (finite numbers only)."""
        anchors = {"weak": [self.weak, *self.anchors.weak], "strong": [self.strong, *self.anchors.strong]}
        extra = {
            "seed": self.config.seed,
            "anchors": anchors,
            "dominated_points": self.dominated,
            "presets": self.presets,
            "embed_s": self.embed_s,
        }
        data: dict[str, Any] = finite(
            report(self.results, self.setting, self.singles, cost_range=self.cost_range, **extra)
        )
        return data

    def plot(self, path: Path) -> None:
        """The Pareto plot (PNG)."""
        title = f"{', '.join(p.name for p in self.config.outcomes)}: {self.setting.description}"
        plot(self.results, self.singles, path, title)


def embed_prompts(setting: Setting) -> None:
    """The prompts' embeddings, computed once here (they are cached per text)."""
    from orchestrator.embedding import embed

    prompts = setting.train.prompts + setting.test.prompts + (setting.probe.prompts if setting.probe else [])
    print(f"embedding {len(prompts)} prompts (cached per text)", file=sys.stderr)
    embed(prompts, progress=True)


def evaluate_setting(config: ItemsConfig, setting: Setting, progress: OnProgress | None = None) -> ItemsReport:
    """Fit and route every method of `config` on a prepared setting (`prepare`)."""
    start = time.perf_counter()
    if any(m in EMBEDDED for m in config.methods):
        embed_prompts(setting)
    embed_s = time.perf_counter() - start
    results: list[MethodResult] = []
    unavailable: dict[str, str] = {}
    for done, name in enumerate(tqdm(config.methods, desc="methods", file=sys.stderr)):
        if progress is not None:
            progress(done, len(config.methods), name)
        try:
            method = make_method(name, config.learned, config.checkpoint)
        except ImportError as exc:
            unavailable[name] = str(exc)
            continue
        results.append(run_method(method, setting, config.seed))
    if progress is not None:
        progress(len(config.methods), len(config.methods), "")
    return ItemsReport(config, setting, results, single_pair_points(setting.test), unavailable, embed_s)


def evaluate_items(config: ItemsConfig, progress: OnProgress | None = None) -> ItemsReport:
    """The whole evaluation: `prepare`, then `evaluate_setting`."""
    return evaluate_setting(config, prepare(config), progress)
