"""What `orchestrator.evaluate` measures and how it shows it: each method's points and
frontier metrics, the text table, the JSON report and the Pareto plot."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.routing import metrics
from orchestrator.routing.methods import knob_label
from orchestrator.routing.table import OutcomeTable

LEARNED = "learned"


@dataclass
class PointResult:
    """One operating point of a method: its knob value and what it achieved on test."""

    knob: float | None
    macro_acc: float
    cost_per_query: float
    calls_per_query: float
    per_domain: dict[str, float]
    per_benchmark: dict[str, float]
    violations: int


@dataclass
class MethodResult:
    name: str
    points: list[PointResult] = field(default_factory=list)
    fit_s: float = 0.0
    route_s: float = 0.0
    not_applicable: str | None = None
    aiq: float = float("nan")
    aiq_rb: float = float("nan")  # RouterBench's definition (`metrics.aiq_routerbench`)
    apgr: float = float("nan")
    cpt50: float | None = None
    cpt80: float | None = None

    @property
    def headline(self) -> PointResult:
        """The most accurate point (the cheaper of equals): the row a table shows."""
        return max(self.points, key=lambda p: (p.macro_acc, -p.cost_per_query))

    def frontier(self) -> list[metrics.Point]:
        return [(p.cost_per_query, p.macro_acc) for p in self.points]


@dataclass(frozen=True)
class Setting:
    """What is evaluated: the fitting table, the test table, and the probe for an unseen pool."""

    train: OutcomeTable
    test: OutcomeTable
    probe: OutcomeTable | None
    description: str


def _fmt(value: float | None, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def point_label(method: str, knob: float | None) -> str:
    """A knob for people: λ=0.05 (`knob_label`), or the zero router's step along its hull."""
    if knob is None:
        return ""
    return f"hull step {knob:g}" if method == "zero" else knob_label(knob)


def format_table(results: list[MethodResult], domains: list[str]) -> str:
    """One row per method (the learned policy also at each λ); columns as in issue 5."""
    header = ["method", "macro", *domains, "$/query", "AIQ", "AIQ-RB", "APGR", "CPT50", "CPT80"]
    rows: list[list[str]] = []
    for result in results:
        if result.not_applicable is not None:
            rows.append([result.name, f"n/a: {result.not_applicable}"])
            continue
        sweep = result.points if result.name == LEARNED and len(result.points) > 1 else []
        for point in sweep:
            label = point_label(result.name, point.knob)
            rows.append(
                [f"  {result.name} {label}", _fmt(point.macro_acc, ".3f")]
                + [_fmt(point.per_domain.get(d), ".3f") for d in domains]
                + [_fmt(point.cost_per_query, ".2e"), "", "", "", "", ""]
            )
        best = result.headline
        knob = "" if best.knob is None else f" (best @ {point_label(result.name, best.knob)})"
        rows.append(
            [result.name + knob, _fmt(best.macro_acc, ".3f")]
            + [_fmt(best.per_domain.get(d), ".3f") for d in domains]
            + [
                _fmt(best.cost_per_query, ".2e"),
                _fmt(result.aiq, ".3f"),
                _fmt(result.aiq_rb, ".3f"),
                _fmt(result.apgr, ".3f"),
                _percent(result.cpt50),
                _percent(result.cpt80),
            ]
        )
    widths = [max(len(r[k]) for r in [header, *rows] if k < len(r) and len(r) > 2) for k in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    for row in rows:
        if len(row) == 2:
            lines.append(f"{row[0].ljust(widths[0])}  {row[1]}")
        else:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def report(
    results: list[MethodResult], setting: Setting, singles: dict[str, metrics.Point], **extra: Any
) -> dict[str, Any]:
    """The JSON report: {"methods": {name: {...}}, "items": N, "models": [...], ...}."""
    methods: dict[str, Any] = {}
    for result in results:
        if result.not_applicable is not None:
            methods[result.name] = {"not_applicable": result.not_applicable}
            continue
        best = result.headline
        methods[result.name] = {
            "macro_acc": best.macro_acc,
            "cost_per_query": best.cost_per_query,
            "aiq": result.aiq,
            "aiq_rb": result.aiq_rb,
            "apgr": result.apgr,
            "cpt50": result.cpt50,
            "cpt80": result.cpt80,
            "points": [[p.cost_per_query, p.macro_acc] for p in result.points],
            "knobs": [p.knob for p in result.points],
            "per_domain": best.per_domain,
            "per_benchmark": best.per_benchmark,
            "calls_per_query": best.calls_per_query,
            "violations": sum(p.violations for p in result.points),
            "fit_s": result.fit_s,
            "route_s": result.route_s,
            "sweep": [vars(p) for p in result.points],
        }
    return {
        "methods": methods,
        "items": setting.test.n_items,
        "models": sorted({m for m, _ in setting.test.pairs}),
        "pairs": [list(p) for p in setting.test.pairs],
        "train_items": setting.train.n_items,
        "probe_items": 0 if setting.probe is None else setting.probe.n_items,
        "split": setting.description,
        "single_pairs": {name: list(point) for name, point in singles.items()},
        **extra,
    }


def finite(value: Any) -> Any:
    """The report with every NaN or infinity as null, so the JSON is standard."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def plot(results: list[MethodResult], singles: dict[str, metrics.Point], path: Path, title: str) -> None:
    """Accuracy against $/query (log x): each method's points and hull, each single pair as a grey dot.

    The hull is drawn from the method's cheapest point on, sampled densely, since a segment
    that is straight in cost is curved on a log axis.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for name, (cost, acc) in singles.items():
        ax.scatter([cost], [acc], color="0.6", s=14, zorder=1)
        label = name.split("/")[-1][:22]
        ax.annotate(label, (cost, acc), fontsize=6, color="0.45", xytext=(3, -2), textcoords="offset points")
    for result in results:
        positive = [(c, a) for c, a in result.frontier() if c > 0]
        if not positive:
            continue
        hull = metrics.nondecreasing_hull(positive)
        start = min(c for c, _ in positive)  # the ramp from the abstain point (0, 0) has no place on a log axis
        xs = np.geomspace(start, max(start, hull[-1][0]), 200)
        label = f"{result.name} (AIQ {result.aiq:.3f})"
        line = ax.plot(xs, [metrics.hull_value(hull, x) for x in xs], lw=1.5, label=label)[0]
        ax.scatter([c for c, _ in positive], [a for _, a in positive], s=12, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("$ / query (log)")
    ax.set_ylabel("macro pass@1")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
