"""Mean ± sd over seeds of `orchestrator.evaluate --json` reports, for before/after tables.

    .venv/bin/python bench/eval_summary.py REPORT.json [REPORT.json ...]

Reports are grouped by their file name less the seed (`before_rb_s0.json`, `before_rb_s1.json`
make one group, `before_rb`). Per group and method: AIQ (the project's), AIQ-RB (RouterBench's
definition, recomputed from the points of every report), the most accurate
point, and the points a single pair or the zero router beats at no more cost (recomputed from
the report's single pairs and the zero router's points, so older reports get it too).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.routing import metrics  # noqa: E402


def summarize(paths: list[Path]) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(paths):
        groups[re.sub(r"_s\d+$", "", path.stem)].append(json.loads(path.read_text()))
    lines = []
    for group, reports in groups.items():
        first = reports[0]
        lines.append(f"\n{group}: {len(reports)} seeds; {first['items']} test items, {first['train_items']} train")
        lines.append(f"{'method':18} {'AIQ':>15} {'AIQ-RB':>15} {'best macro':>10} {'dominated':>9}")
        for name in first["methods"]:
            rows = [r["methods"].get(name, {}) for r in reports]
            if any("not_applicable" in row or not row.get("points") for row in rows):
                continue
            aiq = [row["aiq"] for row in rows]
            rb, beaten = [], []
            for report, row in zip(reports, rows, strict=True):
                c_max = max(c for c, _ in report["single_pairs"].values())
                points = [tuple(p) for p in row["points"]]
                rb.append(metrics.aiq_routerbench(points, c_max))  # from the points, whatever the report's code
                zero = report["methods"].get("zero", {}).get("points") or []
                singles = [tuple(p) for p in report["single_pairs"].values()]
                beaten.append(len(metrics.dominated(points, singles, [tuple(p) for p in zero])))
            best = [row["macro_acc"] for row in rows]
            counts = "/".join(str(b) for b in beaten) if name not in ("oracle", "zero") else "-"
            lines.append(f"{name:18} {_ms(aiq):>15} {_ms(rb):>15} {np.mean(best):10.4f} {counts:>9}")
    return "\n".join(lines)


def _ms(values: list[float]) -> str:
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return f"{np.mean(values):.4f} ± {sd:.4f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    missing = [str(p) for p in args.reports if not p.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    print(summarize(args.reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
