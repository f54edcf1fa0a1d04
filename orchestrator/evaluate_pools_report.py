"""What `orchestrator.evaluate_pools` prints from its rows: per K, each method's AIQ over the
splits and its wins, AIQ-RB, the learned policy against the zero router per split, and the
presets' and the cheap end's checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from orchestrator.evaluate_frontier import ZERO
from orchestrator.evaluate_report import LEARNED


def cheap_end_line(rows: Sequence[dict[str, Any]]) -> str | None:
    """How often the learned `cheap` point is at least as accurate as the cheapest model at no
    more than the probe's best pair's cost (one figure per split: the mean of its seeds)."""
    per_split: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["method"] == LEARNED and row.get("cheap") and row["cheap"].get("probe_pair_cost") is not None:
            per_split.setdefault(row["split"], []).append(row["cheap"])
    if not per_split:
        return None
    met = 0
    for cells in per_split.values():
        macro, cost = np.mean([c["macro"] for c in cells]), np.mean([c["cost"] for c in cells])
        floor, ceiling = np.mean([c["cheapest_macro"] for c in cells]), np.mean([c["probe_pair_cost"] for c in cells])
        met += bool(macro >= floor and cost <= ceiling * (1 + 1e-9))
    cells = [c for split in per_split.values() for c in split]

    def mean(key: str) -> float:
        return float(np.mean([c[key] for c in cells]))

    return (
        f"cheap preset: learned {mean('macro'):.4f} at ${mean('cost'):.3e}; "
        f"cheapest model {mean('cheapest_macro'):.4f}; the probe's best pair at that λ costs "
        f"${mean('probe_pair_cost'):.3e}; both held in {met} of {len(per_split)} splits"
    )


def seed_means(rows: Sequence[dict[str, Any]], key: str, methods: Sequence[str]) -> dict[str, dict[str, float]]:
    """{split: {method: the mean of `key` over its seeds}}, for the rows that have it."""
    out: dict[str, dict[str, float]] = {}
    for split in sorted({r["split"] for r in rows}):
        out[split] = {}
        for name in methods:
            values = [r[key] for r in rows if r["split"] == split and r["method"] == name and r.get(key) is not None]
            if values:
                out[split][name] = float(np.mean(values))
    return out


def summarize(rows: Sequence[dict[str, Any]], methods: Sequence[str], ks: Sequence[int]) -> str:
    """One table per K: AIQ mean ± sd over splits (each split's seed mean), wins per method, and
    AIQ by RouterBench's definition; then the learned policy against the zero router per split."""
    lines = []
    for k in ks:
        at_k = [r for r in rows if r["k"] == k and r["aiq"] is not None]
        per_split = seed_means(at_k, "aiq", methods)
        per_split_rb = seed_means(at_k, "aiq_rb", methods)
        wins = {name: 0 for name in methods}
        for scores in per_split.values():
            if scores:
                wins[max(scores, key=lambda name: scores[name])] += 1
        lines.append(f"\nK = {k} probe items per unseen model; {len(per_split)} splits")
        lines.append(f"{'method':14} {'AIQ mean':>9} {'± sd':>7} {'splits':>6} {'best in':>8} {'AIQ-RB':>7}")
        order = sorted(methods, key=lambda name: -np.mean([s[name] for s in per_split.values() if name in s] or [-1]))
        for name in order:
            values = [s[name] for s in per_split.values() if name in s]
            if not values:
                continue
            sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
            rb = [s[name] for s in per_split_rb.values() if name in s]
            rb_text = f"{np.mean(rb):7.4f}" if rb else "      -"
            lines.append(f"{name:14} {np.mean(values):9.4f} {sd:7.4f} {len(values):6} {wins[name]:8} {rb_text}")
        floor = zero_floor_line(at_k)
        if floor is not None:
            lines.append(floor)
        if LEARNED in methods and per_split:
            lines.append(f"learned is best in {wins.get(LEARNED, 0)} of {len(per_split)} splits")
            lines += against_zero(at_k, per_split_rb)
            presets = presets_line(at_k)
            if presets is not None:
                lines.append(presets)
            cheap = cheap_end_line(at_k)
            if cheap is not None:
                lines.append(cheap)
    timing = time_line(rows)
    if timing is not None:
        lines.append(f"\n{timing}")
    return "\n".join(lines)


def time_line(rows: Sequence[dict[str, Any]]) -> str | None:
    """Where the time of the rows went: training against routing, over all methods and per
    method (rows made before rows recorded it are left out, and counted)."""
    timed = [row for row in rows if "fit_s" in row]
    if not timed:
        return None
    per: dict[str, list[float]] = {}
    for row in timed:
        spent = per.setdefault(row["method"], [0.0, 0.0])
        spent[0] += row["fit_s"]
        spent[1] += row["route_s"]
    fit, route = sum(f for f, _ in per.values()), sum(r for _, r in per.values())
    untimed = f" ({len(rows) - len(timed)} older rows without times)" if len(timed) < len(rows) else ""
    each = ", ".join(f"{name} {f:.0f} + {r:.0f}" for name, (f, r) in per.items())
    return f"time: training {fit:.0f} s, routing {route:.0f} s, over {len(timed)} rows{untimed}; per method (s): {each}"


def zero_floor_line(rows: Sequence[dict[str, Any]]) -> str | None:
    """The zero router's own dominated points (`evaluate_frontier.own_dominated`): what the
    dominance test finds in a router that reads no prompt."""
    counts = [r["dominated"] for r in rows if r["method"] == ZERO and r.get("dominated") is not None]
    if not counts:
        return None
    return (
        f"the zero router's own dominated points (by a single pair or its other points): {sum(counts)}, "
        f"in {sum(c > 0 for c in counts)} of {len(counts)} splits x seeds"
    )


def against_zero(rows: Sequence[dict[str, Any]], per_split_rb: dict[str, dict[str, float]]) -> list[str]:
    """Per split: the learned policy's AIQ-RB against the zero router's, and its dominated points
    (summed over the seeds), beside the zero router's own (`evaluate_frontier.own_dominated`)."""
    lines = []
    margins = []
    for split, scores in per_split_rb.items():
        dominated = [r["dominated"] for r in rows if r["split"] == split and r["method"] == LEARNED
                     and r.get("dominated") is not None]  # fmt: skip
        floor = [r["dominated"] for r in rows if r["split"] == split and r["method"] == ZERO
                 and r.get("dominated") is not None]  # fmt: skip
        if LEARNED not in scores:
            continue
        zero = scores.get("zero")
        versus = "" if zero is None else f" vs zero {zero:.4f} ({scores[LEARNED] - zero:+.4f})"
        if zero is not None:
            margins.append(scores[LEARNED] - zero)
        count = str(sum(dominated)) if dominated else "-"
        own = f" (the zero router's own: {sum(floor)})" if floor else ""
        lines.append(f"  {split}: learned AIQ-RB {scores[LEARNED]:.4f}{versus}; dominated points: {count}{own}")
    if margins:
        held = sum(m >= 0 for m in margins)
        mean = float(np.mean(margins))
        lines.append(f"learned - zero (AIQ-RB): mean {mean:+.4f}; learned >= zero in {held} of {len(margins)} splits")
    return lines


def presets_line(rows: Sequence[dict[str, Any]]) -> str | None:
    """In how many splits each preset of the learned policy kept its promise in every seed
    (`evaluate_frontier.preset_checks`)."""
    held: dict[str, dict[str, bool]] = {}
    for row in rows:
        for preset, check in (row.get("presets") or {}).items() if row["method"] == LEARNED else ():
            split = held.setdefault(preset, {})
            split[row["split"]] = split.get(row["split"], True) and check["held"]
    if not held:
        return None
    parts = [f"{preset} in {sum(splits.values())} of {len(splits)}" for preset, splits in held.items()]
    return "presets held (every seed): " + ", ".join(parts) + " splits"
