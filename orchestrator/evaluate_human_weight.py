"""Held-out agreement with human labels as their weight in OrchRM's training rises.

    python -m orchestrator.evaluate_human_weight [--outcomes F ...] [--prices P] [--labels FILE]
        [--weights 0,1,10,100,1000] [--holdout 0.5] [--seed 0] [--max-pairs N] [--write-labels OUT] [--json OUT]

For each weight, OrchRM is trained on the outcome files' self-supervised pairs plus the
labels (`train_rm.train`), with that weight on every human pair's loss term
(`RMTrainConfig.human_weight`) and `--holdout` of the human pairs kept out of training
(the same ones at every weight, by a hash of their texts); printed: the agreement with the
held-out labels, and what the weight costs on the self-supervised pairs (their training
accuracy, correct over incorrect).

`--labels` takes a JSONL of human pairs (`export_preferences --source human`). Without it,
the labels are a constructed fixture, not people's: 40 items of one benchmark on which
the records have one model right and another wrong (the self-supervised correct-over-
incorrect preference), labelled the other way round (`inverted_labels`; by default MBPP,
gpt-4-1106-preview right, mistral-7b-chat wrong). It measures how far the weight moves
OrchRM toward a preference the records contradict. `--write-labels` saves them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator import cli
from orchestrator.reward.jsonl import PreferenceRecord, read_preferences, write_preferences
from orchestrator.reward.plans import Plan
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable
from orchestrator.train_rm import RMConfig, train

DEFAULT_OUTCOMES = ("data/outcomes/routerbench.jsonl.gz",)
FIXTURE = {"benchmark": "mbpp", "right": "gpt-4-1106-preview", "wrong": "mistralai/mistral-7b-chat"}
FIXTURE_COUNT = 40


def inverted_labels(
    table: OutcomeTable, *, benchmark: str, right: str, wrong: str, count: int, seed: int = 0
) -> list[PreferenceRecord]:
    """`count` human-sourced pairs on items of `benchmark` where `right` scored right and `wrong`
    wrong, each choosing `wrong`'s recorded answer over `right`'s: one self-supervised
    preference, inverted. ValueError when fewer such items are recorded."""
    columns = {model: j for j, (model, _) in enumerate(table.pairs)}
    for model in (right, wrong):
        if model not in columns:
            raise ValueError(f"model {model!r} is not recorded; recorded: {', '.join(sorted(columns))}")
    a, b = columns[right], columns[wrong]
    rows = np.flatnonzero(
        (np.asarray(table.benchmarks) == benchmark) & (table.score[:, a] >= 0.5) & (table.score[:, b] < 0.5)
    )
    if len(rows) < count:
        raise ValueError(f"only {len(rows)} {benchmark} items have {right} right and {wrong} wrong; {count} asked")
    chosen = np.sort(np.random.default_rng(seed).choice(rows, size=count, replace=False))
    primitive_a, primitive_b = table.pairs[a][1], table.pairs[b][1]
    return [
        PreferenceRecord(
            prompt=table.prompts[i],
            chosen=table.responses[i][b] or "",
            rejected=table.responses[i][a] or "",
            source="human",
            chosen_plan=Plan.single(wrong, primitive_b),
            rejected_plan=Plan.single(right, primitive_a),
            extra={
                "domain": table.domains[i],
                "benchmark": benchmark,
                "item_id": table.item_ids[i],
                "fixture": "inverts correct_over_incorrect",
            },  # fmt: skip
        )
        for i in chosen.tolist()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.evaluate_human_weight", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--outcomes", nargs="+", type=Path, default=[Path(p) for p in DEFAULT_OUTCOMES])
    parser.add_argument("--prices", type=Path)
    parser.add_argument("--labels", type=Path, help="human preference pairs (JSONL); default: the inverted fixture")
    parser.add_argument("--weights", type=cli.float_list, default=[0.0, 1.0, 10.0, 100.0, 1000.0])
    parser.add_argument("--holdout", type=float, default=0.5, help="share of the human pairs held out (0 < h < 1)")
    parser.add_argument("--seed", type=cli.non_negative, default=0)
    parser.add_argument("--max-pairs", type=cli.non_negative, help="self-supervised pairs (default: train_rm's)")
    parser.add_argument("--write-labels", type=Path, help="save the labels used (JSONL)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    if not 0 < args.holdout < 1:
        parser.error("--holdout is a share within (0, 1)")
    if any(w < 0 for w in args.weights):
        parser.error("--weights are non-negative")
    for path in [*args.outcomes, *(p for p in (args.prices, args.labels) if p)]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    try:
        cli.check_output(args.json, "--json")
        prices = default_prices(args.outcomes, args.prices)
        if args.labels:
            labels = read_preferences(args.labels)
        else:
            table = load_routable(args.outcomes, prices=prices)
            labels = inverted_labels(table, count=FIXTURE_COUNT, seed=args.seed, **FIXTURE)
    except (*cli.INPUT_ERRORS, ValueError) as error:
        parser.error(str(error))
    if args.write_labels:
        write_preferences(args.write_labels, labels)
    from orchestrator.embedding import embed

    cache: dict[str, np.ndarray] = {}

    def embedder(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, embed(missing), strict=True))
        return np.stack([cache[t] for t in texts])

    base = RMConfig.from_mapping({})
    if args.max_pairs is not None:
        base = replace(base, pairs=replace(base.pairs, max_pairs=args.max_pairs))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for weight in args.weights:
            print(f"human weight {weight:g}: training OrchRM ...", file=sys.stderr, flush=True)
            config = replace(base, train=replace(base.train, human_weight=weight, human_holdout=args.holdout))
            metrics = train(args.outcomes, out=Path(tmp) / "rm.pt", seed=args.seed, config=config, prices=prices,
                            preferences=labels, embedder=embedder, show_progress=False)  # fmt: skip
            rows.append({
                "weight": weight,
                "heldout_agreement": metrics["human_heldout/agreement"],
                "heldout_pairs": int(metrics["human_heldout/pairs"]),
                "train_human_accuracy": metrics.get("train/accuracy/human", float("nan")),
                "train_correct_over_incorrect": metrics.get("train/accuracy/correct_over_incorrect", float("nan")),
            })  # fmt: skip
    source = str(args.labels) if args.labels else "a constructed fixture (not people's labels): " + json.dumps(FIXTURE)
    print(
        f"\nLabels: {len(labels)} human pairs, {source}; {rows[0]['heldout_pairs']} held out (--holdout {args.holdout})"
    )
    print(f"{'human weight':>12}  {'held-out agreement':>18}  {'train: human':>12}  {'train: correct>incorrect':>24}")
    for row in rows:
        print(f"{row['weight']:>12g}  {row['heldout_agreement']:>18.3f}  {row['train_human_accuracy']:>12.3f}  "
              f"{row['train_correct_over_incorrect']:>24.4f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"labels": source, "holdout": args.holdout, "rows": rows}, indent=1))
        print(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
