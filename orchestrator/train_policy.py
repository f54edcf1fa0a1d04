"""Train the learned policy (SFT then GRPO) on recorded outcomes and save a checkpoint.

    python -m orchestrator.train_policy --outcomes data/outcomes/*.jsonl.gz --out .data/policy.pt [--seed 0]

Every item of the given files is a training item. The checkpoint holds the network, its
config, the training config, the metrics and the pool's whole calibration (`context`: the
calibration items' vectors and outcomes and the fitted predictor, so the runtime policy
computes an item's pair features as the evaluation does; an unknown pair gets the pool mean),
and the agreement cascade's gate at each cost preset's λ (`cascade`, fit on the training items,
as the evaluation fits it), which a live run uses with the policy config `{"cascade": true}`.

`--guide CKPT` (a stored OrchRM, `train_rm`) makes RL reward-guided: it also plays every cell
the tables hold no recording of, scored by the guide (`reward.guided.guide_cells`), so a sparse
collection of outcomes trains the policy on every pair of its pool.

`--composites N` also trains the decompose head on N composite tasks built from the items
(`composite.learned`: when splitting a composite pays, at every λ); the checkpoint then
records them, and a run of it decides whether to split each composite task or solve it whole.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from orchestrator import cli
from orchestrator.learning.cascade import fit_gates, gates_payload
from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import PoolContext
from orchestrator.learning.fit import train_network
from orchestrator.learning.method import LearnedConfig
from orchestrator.learning.model import save_checkpoint
from orchestrator.learning.sft import extra_from_records
from orchestrator.outcomes import read_prices
from orchestrator.policies import COST_PRESETS as PRESETS
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable


def pool_payload(context: PoolContext, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The calibration statistics of the training pool, as JSON-able lists."""
    calib = context.calibration
    return {
        "pairs": [list(pair) for pair in pairs],
        "global_acc": calib.global_acc.tolist(),
        "domain_acc": calib.domain_acc.tolist(),
        "domain_cost": calib.domain_cost.tolist(),
        "cost_ref": calib.cost_ref,
    }


def load_guide(path: Path) -> Any:
    """The OrchRM checkpoint at `path`; an InputError names what is wrong with it."""
    from orchestrator.reward.model import RewardModel

    if not path.is_file():
        raise cli.InputError(f"--guide: no such file: {path}")
    try:
        return RewardModel.load(path)
    except (ValueError, RuntimeError, OSError, KeyError, TypeError) as error:
        raise cli.InputError(f"--guide: {path} is not a usable OrchRM checkpoint ({error})") from None


def train(
    paths: Sequence[Path],
    *,
    out: Path,
    seed: int,
    config: LearnedConfig,
    prices: Path | None,
    embedder: Any = None,
    show_progress: bool = True,
    on_progress: Callable[[str, int, int, dict[str, float]], None] | None = None,
    extra_trajectories: Sequence[Mapping[str, Any]] = (),
    unseen: bool = False,
    guide: Path | None = None,
) -> dict[str, float]:
    """Train on every item of `paths`; write the checkpoint to `out`; return the metrics.

    `on_progress(stage, done, total, metrics)` is called after each chunk of prompts the
    embedding cache lacked ("embedding"), every SFT epoch ("sft") and RL update ("rl").
    `extra_trajectories` are live runs,
    {"item_id", "calls": [[model, primitive], ...], "score", "cost_preference"}, used as
    SFT targets where their item is in the tables and their final answer was right.
    """
    table = load_routable(list(paths), prices=prices)
    return train_table(
        table, out=out, seed=seed, config=config, prices=prices, embedder=embedder, show_progress=show_progress,
        on_progress=on_progress, extra_trajectories=extra_trajectories, outcomes=[str(p) for p in paths], unseen=unseen,
        guide=guide,
    )  # fmt: skip


def train_table(
    table: OutcomeTable,
    *,
    out: Path,
    seed: int,
    config: LearnedConfig,
    prices: Path | None,
    embedder: Any = None,
    show_progress: bool = True,
    on_progress: Callable[[str, int, int, dict[str, float]], None] | None = None,
    extra_trajectories: Sequence[Mapping[str, Any]] = (),
    outcomes: Sequence[str] = (),
    unseen: bool = False,
    guide: Path | None = None,
) -> dict[str, float]:
    """`train` on the items of a table (a split of the files, say); `outcomes` names where they came from.

    `unseen`: for pools whose models it will not see, each calibrated on its own probe (a pool's
    `calibration_source`), trained as `evaluate --probe` trains it (`learning.fit.train_network`).
    `guide`: a stored OrchRM checkpoint; RL also plays the cells the tables did not record, each
    scored by it (`reward.guided.guide_cells`).
    """
    guide_model = load_guide(guide) if guide is not None else None
    start = time.perf_counter()
    torch.set_num_threads(config.threads)
    torch.manual_seed(seed)
    np.random.seed(seed)
    if embedder is None:
        from orchestrator.embedding import embed

        def embedded(done: int, total: int) -> None:
            if on_progress is not None:
                on_progress("embedding", done, total, {})

        emb = embed(table.prompts, progress=show_progress, on_chunk=embedded)
    else:
        emb = np.asarray(embedder(table.prompts), dtype=np.float32)
    embedded_s = time.perf_counter() - start
    bars: dict[str, tqdm[Any]] = {}

    def progress(stage: str) -> Any:
        def update(done: int, total: int, metrics: dict[str, float]) -> None:
            if stage not in bars:
                bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, disable=not show_progress)
            bar = bars[stage]
            bar.update(done - bar.n)
            bar.set_postfix({k: round(v, 4) for k, v in metrics.items() if k.startswith(("loss/", "rl/r"))})
            if on_progress is not None:
                on_progress(stage, done, total, metrics)

        return update

    guided = None
    if guide_model is not None:
        from orchestrator.reward.guided import guide_cells

        def guided(batch: Any) -> tuple[Any, dict[str, float]]:
            return guide_cells(batch, table, emb, guide_model)

    net, batch, context, metrics = train_network(
        table, emb, config, seed=seed, unseen=unseen, prices=read_prices(prices) if prices else None,
        extra_records=extra_trajectories, progress_sft=progress("sft"), progress_rl=progress("rl"), guide=guided,
    )  # fmt: skip
    for bar in bars.values():
        bar.close()
    composites: dict[str, Any] = {}
    if config.decompose.composites:
        from orchestrator.composite.learned import train_composite_head

        found, composites = train_composite_head(
            table, emb, (net, batch, context, metrics), config, seed=seed, embedder=embedder,
            prices=read_prices(prices) if prices else {},
        )  # fmt: skip
        metrics |= found
    metrics["time/embed_s"] = embedded_s
    metrics["time/total_s"] = time.perf_counter() - start
    metrics["data/items"] = float(table.n_items)
    metrics["data/pairs"] = float(table.n_pairs)
    extra = extra_from_records(list(extra_trajectories), table.item_ids, table.pairs) if extra_trajectories else None
    metrics["data/extra_trajectories"] = float(len(extra.rows) if extra else 0)
    save_checkpoint(
        out,
        net,
        extra={
            "kind": "orchestra-learned-policy",
            "metrics": metrics,
            "train": {
                **config.to_dict(),
                "seed": seed,
                "outcomes": list(outcomes),
                "unseen": unseen,
                **({"guide": str(guide)} if guide is not None else {}),
            },  # fmt: skip
            "pool": pool_payload(context, table.pairs),
            "context": context_payload(context),
            "cascade": gates_payload(
                fit_gates(net, batch, table.benchmarks, table.responses, list(PRESETS.values()), config.sft.max_steps)
            ),
            **({"composites": composites} if composites else {}),
        },
    )
    return metrics


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.train_policy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", nargs="+", required=True, type=Path, help="outcome files (.jsonl / .jsonl.gz)")
    parser.add_argument("--out", type=Path, default=Path(".data/policy.pt"), help="checkpoint to write")
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first outcome file)")
    parser.add_argument("--epochs", type=cli.non_negative, help="SFT epochs (action heads and reliability head each)")
    parser.add_argument("--rl-iterations", type=cli.non_negative, help="GRPO updates")
    parser.add_argument("--config", type=Path, help="JSON config for the learned policy (as evaluate --learned-config)")
    parser.add_argument(
        "--composites", type=cli.non_negative,
        help="also train the decompose head on this many composite tasks built from the items (0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--guide", type=Path,
        help="an OrchRM checkpoint (train_rm): RL also plays the cells the tables did not record, scored by it",
    )  # fmt: skip
    parser.add_argument(
        "--unseen", action="store_true",
        help="for pools of models it will not see, calibrated on their probes: trained as evaluate --probe trains it",
    )  # fmt: skip
    args = parser.parse_args(argv)
    for path in args.outcomes:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    prices = default_prices(args.outcomes, args.prices)
    try:
        cli.check_output(args.out, "--out")
        config = LearnedConfig.from_mapping(cli.read_config(args.config, "--config"))
        if args.epochs is not None:
            config = replace(config, sft=replace(config.sft, epochs=args.epochs, reliability_epochs=args.epochs))
        if args.rl_iterations is not None:
            config = replace(config, rl=replace(config.rl, iterations=args.rl_iterations))
        if args.composites is not None:
            config = replace(config, decompose=replace(config.decompose, composites=args.composites))
        if args.guide is not None and args.unseen:
            raise cli.InputError("--guide trains one network: it does not go with --unseen")
        metrics = train(
            args.outcomes, out=args.out, seed=args.seed, config=config, prices=prices, unseen=args.unseen,
            guide=args.guide,
        )  # fmt: skip
    except cli.INPUT_ERRORS as error:
        parser.error(str(error))
    print(f"trained on {int(metrics['data/items'])} items x {int(metrics['data/pairs'])} pairs")
    if "unseen/members" in metrics:
        members, per = int(metrics["unseen/members"]), int(metrics["unseen/items_per_member"])
        print(f"for unseen pools: {members} networks of about {per} items each")
    print(f"time: {metrics['time/total_s']:.1f}s (embedding {metrics['time/embed_s']:.1f}s)")
    for key in sorted(metrics):
        if not key.startswith(("time/", "data/")):
            print(f"  {key:24s} {metrics[key]:.4f}")
    print(f"checkpoint: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
