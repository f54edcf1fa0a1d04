"""Train OrchRM (the plan reward model) on preference pairs and save a checkpoint.

    python -m orchestrator.train_rm --outcomes data/outcomes/routerbench.jsonl.gz [...] \
        [--preferences pairs.jsonl ...] [--out .data/reward.pt] [--seed 0] [--max-pairs 250000]

Self-supervised pairs are built from every item of the outcome files (correct over
incorrect, cheaper correct, node-level agreement); `--preferences` adds pairs in the
TRL/HF JSONL format (human labels, or exported from the studio) that carry both plans.
The checkpoint holds the network, the pool's calibration statistics, the metrics and the
lineage (files, sources and pair counts).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from orchestrator import cli
from orchestrator.configs import STRICT_KEYS, ConfigError, from_mapping
from orchestrator.learning.dataset import PoolContext, make_context
from orchestrator.learning.features import task_features
from orchestrator.outcomes import read_prices
from orchestrator.reward.features import plan_features, table_plan_features
from orchestrator.reward.jsonl import PreferenceFormatError, PreferenceRecord, read_preferences
from orchestrator.reward.model import RewardConfig, RewardNet, save_reward_model
from orchestrator.reward.pairs import SOURCES, PairConfig, build_pairs
from orchestrator.reward.platt import platt, rm_rewards
from orchestrator.reward.prior import AccuracyPrior, table_prior
from orchestrator.reward.train import (
    HUMAN,
    LAM_MAX,
    PairTensors,
    RMTrainConfig,
    pair_metrics,
    table_tensors,
    train_reward,
)
from orchestrator.routing.table import OutcomeTable, default_prices, load_routable

Progress = Callable[[str, int, int, dict[str, float]], None]


@dataclass(frozen=True)
class RMConfig:
    """Everything a reward-model training run uses."""

    __pydantic_config__ = STRICT_KEYS

    pairs: PairConfig = field(default_factory=PairConfig)  # self-supervised pair construction
    train: RMTrainConfig = field(default_factory=RMTrainConfig)  # the Bradley-Terry loop
    model: RewardConfig = field(default_factory=RewardConfig)  # network sizes

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None) -> RMConfig:
        """From a plain dict: {"pairs": {...}, "train": {...}, "model": {...}}; `configs.ConfigError`
        names what does not fit."""
        built = from_mapping(cls, config)
        unknown = [name for name in built.pairs.sources if name not in SOURCES]
        if unknown:
            raise ConfigError(f"pairs.sources: unknown {', '.join(map(repr, unknown))}; known: {', '.join(SOURCES)}")
        return built

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def preference_tensors(
    records: Sequence[PreferenceRecord],
    context: PoolContext,
    embedder: Callable[[list[str]], np.ndarray],
    prior: AccuracyPrior | None = None,
) -> tuple[PairTensors | None, int]:
    """(pairs with both plans as tensors, or None; how many records lacked a plan and were left out)."""
    usable = [r for r in records if r.chosen_plan is not None and r.rejected_plan is not None]
    if not usable:
        return None, len(records)
    emb = np.asarray(embedder([r.prompt for r in usable]), dtype=np.float32)
    domains = [str(r.extra.get("domain") or "") for r in usable]
    win = plan_features(context, emb, domains, [r.chosen_plan for r in usable if r.chosen_plan], prior=prior)
    lose = plan_features(context, emb, domains, [r.rejected_plan for r in usable if r.rejected_plan], prior=prior)
    m = len(usable)
    data = PairTensors(
        task=torch.from_numpy(task_features(emb, domains)),
        win=torch.from_numpy(win),
        lose=torch.from_numpy(lose),
        source=np.asarray([r.source for r in usable]),
        group=-1 - np.arange(m, dtype=np.int64),
        lam_lo=torch.zeros(m),
        lam_hi=torch.full((m,), LAM_MAX),
    )
    return data, len(records) - m


def table_pair_data(
    table: OutcomeTable,
    emb: np.ndarray,
    context: PoolContext,
    config: PairConfig,
    *,
    seed: int,
    prior: AccuracyPrior | None = None,
    chosen: np.ndarray | None = None,
    plans: np.ndarray | None = None,
) -> PairTensors:
    """Self-supervised pairs of a table, as tensors (each item's own outcomes left out of its features).

    `prior`, fit on this table (`reward.prior.table_prior`), gives the per-item accuracy feature;
    `chosen` [n] (a trained policy's column on each item, -1: none) adds specialized_over_base;
    `plans`: the items' one-node plan features, where the caller has them (as computed here).
    """
    pairs = build_pairs(table, config=config, seed=seed, embeddings=emb, chosen=chosen)
    if plans is None:
        plans = table_plan_features(context, emb, table.domains, exclude_self=True, prior=prior)
    cost = np.nan_to_num(table.cost) / context.calibration.cost_ref
    return table_tensors(pairs, task_features(emb, table.domains), plans, cost)


def human_holdout(
    records: Sequence[PreferenceRecord], share: float
) -> tuple[list[PreferenceRecord], list[PreferenceRecord]]:
    """(records to train on, human records held out): `share` of the human pairs that carry both
    plans, at least one when there are any and `share` > 0, chosen by a hash of the pair's
    texts (the same split at every run, whatever the order)."""
    usable = [r for r in records if r.source == HUMAN and r.chosen_plan is not None and r.rejected_plan is not None]
    count = min(len(usable), max(1, round(share * len(usable)))) if share > 0 and usable else 0
    if count == len(usable) and count:
        count -= 1  # one human pair at least trains
    key = {id(r): hashlib.sha256("\x1f".join((r.prompt, r.chosen, r.rejected)).encode()).hexdigest() for r in usable}
    held_ids = {id(r) for r in sorted(usable, key=lambda r: key[id(r)])[:count]}
    return [r for r in records if id(r) not in held_ids], [r for r in records if id(r) in held_ids]


def train(
    paths: Sequence[Path],
    *,
    out: Path,
    seed: int,
    config: RMConfig,
    prices: Path | None,
    preferences: Sequence[PreferenceRecord] = (),
    embedder: Callable[[list[str]], np.ndarray] | None = None,
    show_progress: bool = True,
    on_progress: Progress | None = None,
) -> dict[str, float]:
    """Build pairs from every item of `paths` (plus `preferences`), train, write `out`; the metrics.

    `on_progress(stage, done, total, metrics)` is called per embedding chunk ("embedding")
    and per epoch ("train").
    """
    start = time.perf_counter()
    torch.manual_seed(seed)
    table = load_routable(list(paths), prices=prices)
    if embedder is None:
        from orchestrator.embedding import embed

        def embed_all(texts: list[str]) -> np.ndarray:
            def chunk(done: int, total: int) -> None:
                if on_progress is not None:
                    on_progress("embedding", done, total, {})

            return embed(texts, progress=show_progress, on_chunk=chunk)

        embedder = embed_all
    emb = np.asarray(embedder(list(table.prompts)), dtype=np.float32)
    embedded_s = time.perf_counter() - start
    context = make_context(table, emb, read_prices(prices) if prices else None)
    prior = table_prior(table, emb, seed=seed) if config.model.accuracy_prior else None
    one_node = table_plan_features(context, emb, table.domains, exclude_self=True, prior=prior)
    data = table_pair_data(table, emb, context, config.pairs, seed=seed, prior=prior, plans=one_node)
    kept, held = human_holdout(preferences, config.train.human_holdout)
    extra, no_plan = preference_tensors(kept, context, embedder, prior)
    if extra is not None:
        data = PairTensors.concat([data, extra])
    held_data, _ = preference_tensors(held, context, embedder, prior)
    if not len(data):
        names = ", ".join(str(p) for p in paths)
        raise cli.InputError(f"no preference pairs could be built from {names} (it needs items with two or more pairs)")
    built_s = time.perf_counter() - start

    bar = tqdm(total=config.train.epochs, desc="train", file=sys.stderr, disable=not show_progress)

    def epoch_done(done: int, total: int, metrics: dict[str, float]) -> None:
        bar.update(done - bar.n)
        bar.set_postfix({k: round(v, 4) for k, v in metrics.items()})
        if on_progress is not None:
            on_progress("train", done, total, metrics)

    net = RewardNet(config.model)
    metrics = train_reward(net, data, replace(config.train, seed=seed), progress=epoch_done)
    bar.close()
    if held_data is not None:  # agreement with people on labels it did not train on
        agreement = pair_metrics(net, held_data, "human_heldout")
        metrics |= {"human_heldout/agreement": agreement["human_heldout/accuracy"],
                    "human_heldout/pairs": agreement["human_heldout/pairs"]}  # fmt: skip
    # The probability a one-node plan is right, from its accuracy reward: best-of-N over composite
    # plans averages it over the parts (`policies.learned_best_of`).
    fit_platt = platt(rm_rewards(net, task_features(emb, table.domains), one_node),
                      np.where(table.available(), table.score, np.nan))  # fmt: skip
    sources = {str(k): int(v) for k, v in zip(*np.unique(data.source, return_counts=True), strict=True)}
    metrics |= {
        "time/embed_s": embedded_s,
        "time/pairs_s": built_s - embedded_s,
        "time/total_s": time.perf_counter() - start,
        "data/items": float(table.n_items),
        "data/pairs": float(len(data)),
        "data/preferences_without_plans": float(no_plan),
    }
    lineage = {
        "outcomes": [str(p) for p in paths],
        "preferences": len(preferences),
        "sources": sources,
        "seed": seed,
    }
    save_reward_model(
        out,
        net,
        context,
        prior=prior,
        extra={"metrics": metrics, "train": config.to_dict(), "lineage": lineage, "platt": list(fit_platt)},
    )
    return metrics


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.train_rm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--outcomes", nargs="+", required=True, type=Path, help="outcome files (.jsonl / .jsonl.gz)")
    parser.add_argument("--preferences", nargs="*", default=[], type=Path, help="preference pairs (TRL JSONL)")
    parser.add_argument("--out", type=Path, default=Path(".data/reward.pt"), help="checkpoint to write")
    parser.add_argument("--seed", type=cli.seed, default=0)
    parser.add_argument("--prices", type=Path, help="prices.json (default: the one beside the first outcome file)")
    parser.add_argument(
        "--max-pairs", type=cli.non_negative, help="self-supervised pairs after balancing (default 250000; 0 = all)"
    )
    parser.add_argument("--epochs", type=cli.non_negative, help="passes over the pairs")
    parser.add_argument("--config", type=Path, help='JSON config: {"pairs": {...}, "train": {...}, "model": {...}}')
    args = parser.parse_args(argv)
    for path in [*args.outcomes, *args.preferences]:
        if not path.is_file():
            parser.error(f"no such file: {path}")
    prices = default_prices(args.outcomes, args.prices)
    try:
        cli.check_output(args.out, "--out")
        config = RMConfig.from_mapping(cli.read_config(args.config, "--config"))
        if args.max_pairs is not None:
            config = replace(config, pairs=replace(config.pairs, max_pairs=args.max_pairs))
        if args.epochs is not None:
            config = replace(config, train=replace(config.train, epochs=args.epochs))
    except cli.INPUT_ERRORS as error:
        parser.error(str(error))
    records: list[PreferenceRecord] = []
    for path in args.preferences:
        try:
            records += read_preferences(path)
        except PreferenceFormatError as error:
            parser.error(f"{path}: {error}")
    try:
        metrics = train(args.outcomes, out=args.out, seed=args.seed, config=config, prices=prices, preferences=records)
    except cli.INPUT_ERRORS as error:
        parser.error(str(error))
    print(f"pairs: {int(metrics['data/pairs'])} from {int(metrics['data/items'])} items")
    print(
        f"training time: {metrics['time/train_s']:.1f}s on {config.train.threads} CPU threads "
        f"(total {metrics['time/total_s']:.1f}s, embedding {metrics['time/embed_s']:.1f}s, "
        f"pool calibration and pairs {metrics['time/pairs_s']:.1f}s)"
    )
    for key in sorted(metrics):
        if key.startswith(("loss/", "train/")):
            print(f"  {key:40s} {metrics[key]:.4f}")
    print(f"checkpoint: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
