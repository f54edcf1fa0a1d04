"""Is a frontier worth having: its points that a fixed pair, or the zero router, beats, and
whether the learned policy's presets keep their promise (issue 47).

- **Dominated points**: a point of a method is dominated when a single pair on the test
  items, or the zero router's hull (fixed pairs and mixes of two), reaches more accuracy at
  no more cost. The zero router's own points are counted too, each against the single pairs
  and the hull of its other points: the same test for a router that reads no prompt, so the
  count shows how much of it the test's noise and the probe's misranked pairs make
  (docs/evaluation.md, "The test's noise floor").
- **Presets** (`policies.COST_PRESETS`), read off the learned policy's points at their λ:
  `cheap` at least as accurate as the cheapest pair, at no more than its cost; `best` at
  least as accurate as the most accurate pair; `balanced` not dominated.

All of this reads the test items' outcomes: it is a diagnostic of a method, never an input to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.evaluate_report import LEARNED, MethodResult
from orchestrator.policies import COST_PRESETS
from orchestrator.routing import metrics

ZERO = "zero"
TOLERANCE = 1e-9


def dominated_counts(results: Sequence[MethodResult], singles: dict[str, metrics.Point]) -> dict[str, int]:
    """Per method (not the oracle): how many of its points a single pair, or the zero router's
    hull where it ran, beats at no more cost with more accuracy; for the zero router, its points
    that a single pair or the hull of its other points beats (`own_dominated`)."""
    zero = next((r.frontier() for r in results if r.name == ZERO and r.points), [])
    return {
        r.name: len(own_dominated(r.frontier(), singles) if r.name == ZERO else
                    metrics.dominated(r.frontier(), list(singles.values()), zero))
        for r in results
        if r.points and r.name != "oracle"
    }  # fmt: skip


def own_dominated(points: Sequence[metrics.Point], singles: dict[str, metrics.Point]) -> list[metrics.Point]:
    """The points that a single pair, or the hull of the other points, beats at no more cost
    with more accuracy: the dominance test of a method against itself."""
    return [
        point
        for k, point in enumerate(points)
        if metrics.dominated([point], list(singles.values()), [*points[:k], *points[k + 1 :]])
    ]


def preset_checks(results: Sequence[MethodResult], singles: dict[str, metrics.Point]) -> dict[str, Any]:
    """{preset: {"macro", "cost", "against", "held"}} for the learned policy's presets; {} without it."""
    learned = next((r for r in results if r.name == LEARNED and r.points), None)
    if learned is None or not singles:
        return {}
    zero = next((r.frontier() for r in results if r.name == ZERO and r.points), [])
    cheapest = min(singles.values(), key=lambda p: (p[0], -p[1]))
    strongest = max(singles.values(), key=lambda p: (p[1], -p[0]))
    out: dict[str, Any] = {}
    for preset, lam in COST_PRESETS.items():
        point = next((p for p in learned.points if p.knob is not None and abs(p.knob - lam) < 1e-12), None)
        if point is None:
            continue
        cost, macro = point.cost_per_query, point.macro_acc
        if preset == "cheap":
            held = macro >= cheapest[1] - TOLERANCE and cost <= cheapest[0] + TOLERANCE
            against = f"the cheapest pair: {cheapest[1]:.4f} at ${cheapest[0]:.3e}"
        elif preset == "best":
            held = macro >= strongest[1] - TOLERANCE
            against = f"the most accurate pair: {strongest[1]:.4f} at ${strongest[0]:.3e}"
        else:
            held = not metrics.dominated([(cost, macro)], list(singles.values()), zero)
            against = "single pairs" + (" and the zero router" if zero else "") + ": not dominated"
        out[preset] = {"lambda": lam, "macro": macro, "cost": cost, "against": against, "held": bool(held)}
    return out


def frontier_lines(results: Sequence[MethodResult], beaten: dict[str, int], presets: dict[str, Any]) -> list[str]:
    """The printed lines: dominated points per method, then each preset against its promise."""
    lines = []
    if beaten:
        by = "a single pair or the zero router" if any(r.name == ZERO for r in results) else "a single pair"
        counts = ", ".join(f"{name} {count}" for name, count in beaten.items() if name != ZERO)
        lines.append(f"dominated points (by {by}, at no more cost): {counts}")
        if ZERO in beaten:
            own = "by a single pair or its other points (a router that reads no prompt)"
            lines.append(f"  the zero router's own, {own}: {beaten[ZERO]}")
    for preset, check in presets.items():
        verdict = "held" if check["held"] else "NOT HELD"
        lines.append(
            f"preset {preset} (λ={check['lambda']:g}): {check['macro']:.4f} at ${check['cost']:.3e}; "
            f"against {check['against']}: {verdict}"
        )
    return lines
