"""Composite tasks: decompose or delegate, scored and costed from the records alone.

    python -m orchestrator.evaluate_composite [--outcomes FILE ...] [--prices P] [--seeds 0,1,2]
        [--train-count 2000] [--test-count 1000] [--methods always_delegate,...,learned]
        [--learned-config CONFIG.json] [--penalty 0] [--sensitivity 0,0.05,0.1,0.2]
        [--planner MODEL] [--json OUT]

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
  `--penalty` per extra part (0: no interference);
- a planner call costs its estimated tokens at the planner model's prices.

Printed: each method's AIQ (mean ± sd over the seeds), its most accurate point and its
decompose rate; then, per interference penalty of `--sensitivity`, each method's AIQ and
how often `decide_mf` (decompose or delegate by the MF router's estimates) decomposes, by
kind of composite, at three λ: where the decision flips.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator import cli
from orchestrator.composite.baselines import COMPOSITE_METHODS as BASELINES
from orchestrator.composite.baselines import CompositeMethod
from orchestrator.composite.build import MIXED_DOMAIN, SAME_DOMAIN, Composite, CompositeConfig, build_split
from orchestrator.composite.outcome import CompositeCosting, planner_price
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


def make_method(name: str, args: argparse.Namespace) -> CompositeMethod:
    if name != "learned":
        return BASELINES[name]()
    from orchestrator.composite.learned import LearnedComposite  # torch: only when asked for

    return LearnedComposite(args.learned)


def add_draw_arguments(parser: argparse.ArgumentParser) -> None:
    """The outcome files, prices, seeds and composite counts, shared with `evaluate_rm_composite`."""
    parser.add_argument("--outcomes", nargs="+", type=Path, default=list(DEFAULT_OUTCOMES), help="outcome files")
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first --outcomes file)")
    parser.add_argument("--seeds", type=cli.int_list, default=[0, 1, 2], help="comma-separated seeds")
    parser.add_argument("--train-count", type=cli.positive, default=2000, help="train composites per seed")
    parser.add_argument("--test-count", type=cli.positive, default=1000, help="test composites per seed")


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.evaluate_composite", description=__doc__.split("\n\n")[0]
    )
    add_draw_arguments(parser)
    parser.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}")
    parser.add_argument(
        "--learned-config", type=Path, help="JSON config of the learned policy (and its decompose head)"
    )
    parser.add_argument("--penalty", type=cli.finite, default=0.0, help="interference penalty per extra delegated part")
    parser.add_argument("--sensitivity", help="comma-separated penalties for the sensitivity table (e.g. 0,0.05,0.1)")
    parser.add_argument("--planner", help="the planner model (default: the cheapest priced one)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    for path in [*args.outcomes, *(p for p in (args.prices, args.learned_config) if p)]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    names = [n.strip() for n in args.methods.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        parser.error(f"unknown method(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(METHODS)}")
    args.method_names = names
    args.learned = None
    if "learned" in names:
        from orchestrator.learning.method import LearnedConfig  # torch: only when asked for

        try:
            args.learned = LearnedConfig.from_mapping(
                cli.read_config(args.learned_config, "--learned-config")
            ).to_dict()
        except cli.INPUT_ERRORS as error:
            parser.error(str(error))
    args.penalties = [args.penalty]
    if args.sensitivity:
        try:
            args.penalties = sorted({float(p) for p in args.sensitivity.split(",") if p.strip()} | {args.penalty})
        except ValueError:
            parser.error(f"--sensitivity takes comma-separated numbers, not {args.sensitivity!r}")
    if not all(0.0 <= p <= 1.0 for p in args.penalties):
        parser.error("an interference penalty is within [0, 1]")
    return parser, args


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
    args: argparse.Namespace,
    prices: dict[str, Any],
    seed: int,
    step: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every method at every penalty on one seed's composites; `step(label)` before each fit."""
    train, test = build_split(table, train_count=args.train_count, test_count=args.test_count, seed=seed,
                              config=CompositeConfig())  # fmt: skip
    train_rows = sorted({leaf for c in train for leaf in c.leaves()})
    planner, price = planner_price(prices, args.planner, table)
    result: dict[str, Any] = {"seed": seed, "planner": planner, "penalties": {}}
    made = {name: make_method(name, args) for name in args.method_names}  # fit again per penalty
    for penalty in args.penalties:
        costing = CompositeCosting(table, planner_price=price, penalty=penalty)
        lo, hi = cost_range(costing, test)
        methods: dict[str, Any] = {}
        for name in args.method_names:
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


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    first = results[0]
    lines = [
        ASSUMPTIONS,
        "",
        f"Seeds {','.join(str(r['seed']) for r in results)}; {args.train_count} train and {args.test_count} test "
        f"composites per seed; planner {first['planner']}; test composites of seed {first['seed']}: {first['test']}.",
        "",
        f"Interference penalty {args.penalty:g} per extra delegated part:",
        "",
        "| method | AIQ | best score | at cost | decompose rate there |",
        "|---|---|---|---|---|",
    ]
    for name in args.method_names:
        rows = [r["penalties"][str(args.penalty)]["methods"][name] for r in results]
        best = {key: np.mean([m["best"][key] for m in rows]) for key in ("score", "cost", "decompose_rate")}
        aiq = mean_sd([m["aiq"] for m in rows])
        lines.append(f"| {name} | {aiq} | {best['score']:.4f} | ${best['cost']:.3e} | {best['decompose_rate']:.2f} |")
    lines += rates_by_lambda(results, args)
    if len(args.penalties) > 1:
        lines += [
            "",
            "Sensitivity to the interference penalty (AIQ and decompose rates, seed means):",
        ]
        lines += sensitivity(results, args)
    return "\n".join(lines)


def rates_by_lambda(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """How often each method that chooses decomposes, same-domain / mixed-domain, by λ; and how
    often the learned head's decisions on the test composites were the better option."""
    deciders = [n for n in ("decide_mf", "learned") if n in args.method_names]
    if not deciders:
        return []
    head = "| method | " + " | ".join(f"λ={lam:g}" for lam in RATE_LAMBDAS) + " |"
    lines = ["", "Decompose rate by λ (same-domain / mixed-domain composites, seed means):", "", head]
    lines.append("|---" * (1 + len(RATE_LAMBDAS)) + "|")
    for name in deciders:
        at = [r["penalties"][str(args.penalty)]["methods"][name] for r in results]
        cells = []
        for lam in RATE_LAMBDAS:
            points = [point_at(m["points"], lam) for m in at]
            cells.append(" / ".join(rate_text(rate_mean(points, kind)) for kind in (SAME_DOMAIN, MIXED_DOMAIN)))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if "learned" in args.method_names:
        at = [r["penalties"][str(args.penalty)]["methods"]["learned"]["decisions"] for r in results]
        agree = ", ".join(
            f"{rate_text(mean_known([d[str(lam)] for d in at]))} at λ={lam:g}" for lam in DECISION_LAMBDAS
        )
        lines += [
            "",
            f"learned: its decisions on test composites take the option worth more under its routes: {agree}.",
        ]
        off = [r["penalties"][str(args.penalty)]["methods"]["learned"]["head_off"]["aiq"] for r in results]
        lines.append(f"learned with its head off (every composite split, each part routed by it): AIQ {mean_sd(off)}.")
    return lines


def sensitivity(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    deciders = [n for n in ("decide_mf", "learned") if n in args.method_names]  # the methods that choose
    rates = [f"{n} decomposes at λ={lam:g} (same / mixed)" for n in deciders for lam in DECISION_LAMBDAS]
    head = ["penalty", *args.method_names, *rates]
    lines = ["", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for penalty in args.penalties:
        at = [r["penalties"][str(penalty)]["methods"] for r in results]
        cells = [f"{penalty:g}", *(f"{np.mean([m[n]['aiq'] for m in at]):.4f}" for n in args.method_names)]
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


def summary(results: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """The report's figures as data (the studio shows them): per method its AIQ over the
    seeds and its best point, at the main penalty; the deciders' decompose rates by λ; the
    learned head's agreement on the test composites; each method's mean AIQ per penalty."""
    main = [r["penalties"][str(args.penalty)]["methods"] for r in results]
    methods = {}
    for name in args.method_names:
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
        if name in args.method_names
    }
    decisions = (
        {f"{lam:g}": mean_known([m["learned"]["decisions"][str(lam)] for m in main]) for lam in DECISION_LAMBDAS}
        if "learned" in args.method_names
        else {}
    )
    head_off = [float(m["learned"]["head_off"]["aiq"]) for m in main] if "learned" in args.method_names else []
    sensitivity = {
        f"{penalty:g}": {
            name: float(np.mean([r["penalties"][str(penalty)]["methods"][name]["aiq"] for r in results]))
            for name in args.method_names
        }
        for penalty in args.penalties
    }
    return {
        "order": list(args.method_names),  # JSON objects need not keep their keys' order (jsonb does not)
        "penalty": args.penalty, "seeds": [r["seed"] for r in results], "test": results[0]["test"],
        "planner": results[0]["planner"], "methods": methods, "rates": rates, "decisions": decisions,
        "head_off": {"aiq": head_off, "aiq_mean": float(np.mean(head_off)) if head_off else None},
        "sensitivity": sensitivity,
    }  # fmt: skip


def main(argv: Sequence[str] | None = None, on_progress: OnProgress | None = None) -> int:
    parser, args = parse_args(argv)
    prices_path = default_prices(args.outcomes, args.prices)
    total = len(args.seeds) * len(args.penalties) * len(args.method_names)
    done = 0

    def step(label: str) -> None:
        nonlocal done
        if on_progress is not None:
            on_progress(done, total, label)
        done += 1

    try:
        cli.check_output(args.json, "--json")
        prices = read_prices(prices_path) if prices_path is not None else {}
        table = load_routable(args.outcomes, prices=prices_path)
        results = [evaluate_seed(table, args, prices, seed, step) for seed in args.seeds]
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    if on_progress is not None:
        on_progress(total, total, "")
    print(report(results, args))
    if args.json is not None:
        report_data = {"kind": "composites", "assumptions": ASSUMPTIONS, "summary": summary(results, args)}
        args.json.write_text(json.dumps({**report_data, "seeds": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
