"""The composite evaluation as a library: composite tasks, decompose or delegate, scored and
costed from the records alone. `evaluate_composites(config, progress) -> CompositesReport`; a
config that cannot be used raises `UsageError` naming the option. `python -m
orchestrator.evaluate_composite` and the studio's evaluation jobs both call it.
Composites of 2 to 6 recorded items (one domain or several, one source or several, a
quarter nested) are drawn per seed: the train ones from the tables' train items, the test
ones from their test items whose text no train item has, so no test part is seen in training
(`composite.build`). Each method plans every test composite at each λ of its sweep; a plan's
score (the mean of its parts' recorded scores) and cost (the parts' recorded costs, and the
estimated planner calls) follow `composite.outcome`, whose two assumptions every report
repeats. `learned` is the
learned policy: trained on the train composites' items, its decompose head then fit on the
train composites' decisions (`composite.learned`); it is fit once per seed, its head once per
penalty.

- delegating several parts to one call scores each as that pair's answer to it alone, less
  `penalty` per extra part (0: no interference);
- a planner call costs its estimated tokens at the planner model's prices.

Printed: each method's AIQ (mean ± sd over the seeds), its most accurate point and its
decompose rate; then, per interference penalty of `sensitivity`, each method's AIQ and
how often `decide_mf` (decompose or delegate by the MF router's estimates) decomposes, by
kind of composite, at three λ: where the decision flips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.composite.baselines import COMPOSITE_METHODS as BASELINES
from orchestrator.composite.baselines import CompositeMethod
from orchestrator.composite.build import MIXED_DOMAIN, SAME_DOMAIN, Composite, CompositeConfig, build_split
from orchestrator.composite.outcome import CompositeCosting, planner_price
from orchestrator.errors import UsageError
from orchestrator.outcomes import read_prices
from orchestrator.routing import metrics
from orchestrator.routing.methods import CASCADE_OFFSET
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable

DEFAULT_OUTCOMES = (Path("data/outcomes/routerbench.jsonl.gz"), Path("data/outcomes/llmrouter.jsonl.gz"))
ASSUMPTIONS = (
    "Assumptions: a delegated call scores each part as the pair's recorded answer to that part alone, "
    "less the interference penalty per extra part; a planner call costs its estimated tokens "
    "(4 characters a token) at the planner model's prices."
)
DECISION_LAMBDAS = (0.0, 0.1, 1.0)  # where the sensitivity table shows the deciders' decompose rates
KINDS = (SAME_DOMAIN, MIXED_DOMAIN)
RATE_LAMBDAS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)  # the decompose rate by λ, at the main penalty
METHODS = (*BASELINES, "learned")


@dataclass(frozen=True)
class CompositesConfig:
    """What to evaluate; the module's docstring says what the penalty and the planner do."""

    outcomes: tuple[Path, ...] = DEFAULT_OUTCOMES
    prices: Path | None = None
    seeds: tuple[int, ...] = (0, 1, 2)
    train_count: int = 2000
    test_count: int = 1000
    methods: tuple[str, ...] = METHODS
    learned: Mapping[str, Any] | None = None  # the learned policy's config (and its decompose head's)
    penalty: float = 0.0  # the interference penalty per extra delegated part
    sensitivity: tuple[float, ...] = ()  # more penalties, for the sensitivity table
    planner: str | None = None  # the planner model (default: the cheapest priced one)

    @property
    def penalties(self) -> list[float]:
        """Every penalty evaluated: the main one and the sensitivity table's, in order."""
        return sorted({*self.sensitivity, self.penalty})


def check(config: CompositesConfig) -> CompositesConfig:
    """The config with the learned policy's config filled in; UsageError for the first thing that
    cannot be used, before any work starts."""
    for path in [*config.outcomes, *([config.prices] if config.prices else [])]:
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
    unknown = [n for n in config.methods if n not in METHODS]
    if unknown or not config.methods:
        raise UsageError(f"unknown method(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHODS)}")
    if not config.seeds:
        raise UsageError("--seeds needs at least one seed")
    if config.train_count < 1 or config.test_count < 1:
        raise UsageError("--train-count and --test-count must be 1 or more")
    if not all(0.0 <= p <= 1.0 for p in config.penalties):
        raise UsageError("an interference penalty is within [0, 1]")
    if "learned" not in config.methods:
        return replace(config, learned=None)
    from orchestrator.learning.method import LearnedConfig  # torch: only when asked for

    try:
        learned = LearnedConfig.from_mapping(config.learned).to_dict()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return replace(config, learned=learned)


def make_method(name: str, config: CompositesConfig) -> CompositeMethod:
    if name != "learned":
        return BASELINES[name]()
    from orchestrator.composite.learned import LearnedComposite  # torch: only when asked for

    return LearnedComposite(config.learned)


def cost_range(costing: CompositeCosting, composites: Sequence[Composite]) -> tuple[float, float]:
    """AIQ's cost range: every part to its cheapest recorded pair, to its dearest (mean per composite)."""
    cost = np.where(costing.table.available(), costing.table.cost, np.nan)
    low, high = np.nanmin(cost, axis=1), np.nanmax(cost, axis=1)
    lo = float(np.mean([low[list(c.leaves())].sum() for c in composites]))
    hi = float(np.mean([high[list(c.leaves())].sum() for c in composites]))
    return lo, hi


def run_method(method: CompositeMethod, costing: CompositeCosting, test: Sequence[Composite]) -> list[dict[str, Any]]:
    kinds = np.asarray([c.kind for c in test])
    points = []
    for knob in method.knobs:
        outcomes = [costing.outcome(c, plan) for c, plan in zip(test, method.plans(test, knob=knob), strict=True)]
        decomposed = np.asarray([o.decomposed for o in outcomes], dtype=float)
        point: dict[str, Any] = {
            "knob": knob,
            "score": float(np.mean([o.score for o in outcomes])),
            "cost": float(np.mean([o.cost for o in outcomes])),
            "decompose_rate": float(decomposed.mean()),
            "violations": int(sum(o.violations for o in outcomes)),
        }
        for kind in (SAME_DOMAIN, MIXED_DOMAIN):
            point[f"decompose_rate_{kind}"] = (
                float(decomposed[kinds == kind].mean()) if (kinds == kind).any() else None  # none of that kind
            )
        points.append(point)
    return points


OnProgress = Callable[[int, int, str], None]  # (steps done, steps in all, what comes next), as evaluate's


def evaluate_seed(
    table: OutcomeTable,
    config: CompositesConfig,
    prices: dict[str, Any],
    seed: int,
    step: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every method at every penalty on one seed's composites; `step(label)` before each fit."""
    train, test = build_split(table, train_count=config.train_count, test_count=config.test_count, seed=seed,
                              config=CompositeConfig())  # fmt: skip
    train_rows = sorted({leaf for c in train for leaf in c.leaves()})
    planner, price = planner_price(prices, config.planner, table)
    result: dict[str, Any] = {"seed": seed, "planner": planner, "penalties": {}}
    made = {name: make_method(name, config) for name in config.methods}  # fit again per penalty
    for penalty in config.penalties:
        costing = CompositeCosting(table, planner_price=price, penalty=penalty)
        lo, hi = cost_range(costing, test)
        methods: dict[str, Any] = {}
        for name in config.methods:
            step(f"{name} (seed {seed}, penalty {penalty:g})")
            method = made[name]
            method.fit(costing, train_rows, train, seed=seed)
            points = run_method(method, costing, test)
            frontier = [(p["cost"], p["score"]) for p in points]
            best = max(points, key=lambda p: (p["score"], -p["cost"]))
            methods[name] = {"aiq": metrics.aiq(frontier, (lo, hi)), "best": best, "points": points}
            if name == "learned":  # its training figures, and its decisions on the test composites
                from orchestrator.composite.learned import decision_agreement

                methods[name]["fit"] = dict(getattr(method, "metrics", {}))
                methods[name]["decisions"] = {
                    str(lam): decision_agreement(method, test, lam=lam)  # type: ignore[arg-type]
                    for lam in DECISION_LAMBDAS
                }
                # The same fit with its head off, every composite split: what the head itself earns.
                method.head = False  # type: ignore[attr-defined]
                off = run_method(method, costing, test)
                method.head = True  # type: ignore[attr-defined]
                methods[name]["head_off"] = {"aiq": metrics.aiq([(p["cost"], p["score"]) for p in off], (lo, hi))}
        result["penalties"][str(penalty)] = {"cost_range": [lo, hi], "methods": methods}
    kinds = {kind: sum(c.kind == kind for c in test) for kind in (SAME_DOMAIN, MIXED_DOMAIN)}
    result["test"] = {
        **kinds,
        "nested": sum(c.depth > 1 for c in test),
        "cross_source": sum(c.cross_source for c in test),
    }
    return result


def mean_sd(values: Sequence[float]) -> str:
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


def report(results: list[dict[str, Any]], config: CompositesConfig) -> str:
    first = results[0]
    lines = [
        ASSUMPTIONS,
        "",
        f"Seeds {','.join(str(r['seed']) for r in results)}; {config.train_count} train and {config.test_count} test "
        f"composites per seed; planner {first['planner']}; test composites of seed {first['seed']}: {first['test']}.",
        "",
        f"Interference penalty {config.penalty:g} per extra delegated part:",
        "",
        "| method | AIQ | best score | at cost | decompose rate there |",
        "|---|---|---|---|---|",
    ]
    for name in config.methods:
        rows = [r["penalties"][str(config.penalty)]["methods"][name] for r in results]
        best = {key: np.mean([m["best"][key] for m in rows]) for key in ("score", "cost", "decompose_rate")}
        aiq = mean_sd([m["aiq"] for m in rows])
        lines.append(f"| {name} | {aiq} | {best['score']:.4f} | ${best['cost']:.3e} | {best['decompose_rate']:.2f} |")
    lines += rates_by_lambda(results, config)
    if len(config.penalties) > 1:
        lines += [
            "",
            "Sensitivity to the interference penalty (AIQ and decompose rates, seed means):",
        ]
        lines += sensitivity(results, config)
    return "\n".join(lines)


def rates_by_lambda(results: list[dict[str, Any]], config: CompositesConfig) -> list[str]:
    """How often each method that chooses decomposes, same-domain / mixed-domain, by λ; and how
    often the learned head's decisions on the test composites were the better option."""
    deciders = [n for n in ("decide_mf", "learned") if n in config.methods]
    if not deciders:
        return []
    head = "| method | " + " | ".join(f"λ={lam:g}" for lam in RATE_LAMBDAS) + " |"
    lines = ["", "Decompose rate by λ (same-domain / mixed-domain composites, seed means):", "", head]
    lines.append("|---" * (1 + len(RATE_LAMBDAS)) + "|")
    for name in deciders:
        at = [r["penalties"][str(config.penalty)]["methods"][name] for r in results]
        cells = []
        for lam in RATE_LAMBDAS:
            points = [point_at(m["points"], lam) for m in at]
            cells.append(" / ".join(rate_text(rate_mean(points, kind)) for kind in (SAME_DOMAIN, MIXED_DOMAIN)))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if "learned" in config.methods:
        at = [r["penalties"][str(config.penalty)]["methods"]["learned"]["decisions"] for r in results]
        agree = ", ".join(
            f"{rate_text(mean_known([d[str(lam)] for d in at]))} at λ={lam:g}" for lam in DECISION_LAMBDAS
        )
        lines += [
            "",
            f"learned: its decisions on test composites take the option worth more under its routes: {agree}.",
        ]
        off = [r["penalties"][str(config.penalty)]["methods"]["learned"]["head_off"]["aiq"] for r in results]
        lines.append(f"learned with its head off (every composite split, each part routed by it): AIQ {mean_sd(off)}.")
    return lines


def sensitivity(results: list[dict[str, Any]], config: CompositesConfig) -> list[str]:
    deciders = [n for n in ("decide_mf", "learned") if n in config.methods]  # the methods that choose
    rates = [f"{n} decomposes at λ={lam:g} (same / mixed)" for n in deciders for lam in DECISION_LAMBDAS]
    head = ["penalty", *config.methods, *rates]
    lines = ["", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for penalty in config.penalties:
        at = [r["penalties"][str(penalty)]["methods"] for r in results]
        cells = [f"{penalty:g}", *(f"{np.mean([m[n]['aiq'] for m in at]):.4f}" for n in config.methods)]
        for name in deciders:
            for lam in DECISION_LAMBDAS:
                points = [point_at(m[name]["points"], lam) for m in at]
                cells.append(" / ".join(rate_text(rate_mean(points, kind)) for kind in (SAME_DOMAIN, MIXED_DOMAIN)))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def rate_mean(points: Sequence[dict[str, Any]], kind: str) -> float | None:
    """The mean decompose rate on composites of `kind` over the points; None where none had any."""
    rates = [p[f"decompose_rate_{kind}"] for p in points if p[f"decompose_rate_{kind}"] is not None]
    return float(np.mean(rates)) if rates else None


def mean_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def rate_text(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.2f}"


def point_at(points: Sequence[dict[str, float]], lam: float) -> dict[str, float]:
    """The point of a sweep at the knob nearest to λ (a cascade knob is not a λ)."""
    plain = [p for p in points if p["knob"] < CASCADE_OFFSET] or list(points)
    return min(plain, key=lambda p: abs(p["knob"] - lam))


def summary(results: list[dict[str, Any]], config: CompositesConfig) -> dict[str, Any]:
    """The report's figures as data (the studio shows them): per method its AIQ over the
    seeds and its best point, at the main penalty; the deciders' decompose rates by λ; the
    learned head's agreement on the test composites; each method's mean AIQ per penalty."""
    main = [r["penalties"][str(config.penalty)]["methods"] for r in results]
    methods = {}
    for name in config.methods:
        rows = [m[name] for m in main]
        methods[name] = {
            "aiq": [float(m["aiq"]) for m in rows],
            "aiq_mean": float(np.mean([m["aiq"] for m in rows])),
            "aiq_sd": float(np.std([m["aiq"] for m in rows])),
            **{key: float(np.mean([m["best"][key] for m in rows])) for key in ("score", "cost", "decompose_rate")},
        }
    rates = {
        name: {
            f"{lam:g}": [
                rate_mean([point_at(m[name]["points"], lam) for m in main], kind)
                for kind in (SAME_DOMAIN, MIXED_DOMAIN)
            ]
            for lam in RATE_LAMBDAS
        }
        for name in ("decide_mf", "learned")
        if name in config.methods
    }
    decisions = (
        {f"{lam:g}": mean_known([m["learned"]["decisions"][str(lam)] for m in main]) for lam in DECISION_LAMBDAS}
        if "learned" in config.methods
        else {}
    )
    head_off = [float(m["learned"]["head_off"]["aiq"]) for m in main] if "learned" in config.methods else []
    sensitivity = {
        f"{penalty:g}": {
            name: float(np.mean([r["penalties"][str(penalty)]["methods"][name]["aiq"] for r in results]))
            for name in config.methods
        }
        for penalty in config.penalties
    }
    return {
        "order": list(config.methods),  # JSON objects need not keep their keys' order (jsonb does not)
        "penalty": config.penalty, "seeds": [r["seed"] for r in results], "test": results[0]["test"],
        "planner": results[0]["planner"], "methods": methods, "rates": rates, "decisions": decisions,
        "head_off": {"aiq": head_off, "aiq_mean": float(np.mean(head_off)) if head_off else None},
        "sensitivity": sensitivity,
    }  # fmt: skip


@dataclass
class CompositesReport:
    """Every method at every penalty on each seed's composites."""

    config: CompositesConfig
    results: list[dict[str, Any]] = field(default_factory=list)  # one per seed (`evaluate_seed`)

    def text(self) -> str:
        """The tables the CLI prints."""
        return report(self.results, self.config)

    def to_json(self) -> dict[str, Any]:
        """The JSON report: the assumptions, the summary the studio shows, and every seed's figures."""
        data = {"kind": "composites", "assumptions": ASSUMPTIONS, "summary": summary(self.results, self.config)}
        return {**data, "seeds": self.results}


def evaluate_composites(config: CompositesConfig, progress: OnProgress | None = None) -> CompositesReport:
    """Check the config, draw each seed's composites, and evaluate every method at every penalty;
    `progress(done, total, label)` before each fit and once at the end with label ""."""
    config = check(config)
    prices_path = default_prices(list(config.outcomes), config.prices)
    total = len(config.seeds) * len(config.penalties) * len(config.methods)
    done = 0

    def step(label: str) -> None:
        nonlocal done
        if progress is not None:
            progress(done, total, label)
        done += 1

    try:
        prices = read_prices(prices_path) if prices_path is not None else {}
        table = load_routable(list(config.outcomes), prices=prices_path)
    except OSError as exc:
        raise UsageError(f"cannot read the outcome files: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        results = [evaluate_seed(table, config, prices, seed, step) for seed in config.seeds]
    except ValueError as exc:  # a draw the tables cannot give (too few items for the counts)
        raise UsageError(str(exc)) from None
    if progress is not None:
        progress(total, total, "")
    return CompositesReport(config, results)
