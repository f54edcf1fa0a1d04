"""Outcome tables as episode tensors: task, pair and response features for every (item, pair).

Calibration statistics come from calibration items (the train table for a seen pool, the
probe table for an unseen one) and are attached to the items being encoded. The recorded
score and cost are attached only when `with_outcomes` (training); at route time the
policy sees estimated costs and, as pairs execute, their responses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from orchestrator.learning.calibration import Calibration, calibrate, known_domains, pair_features
from orchestrator.learning.episode import EpisodeBatch
from orchestrator.learning.features import PairInfo, domain_indices, pair_infos, task_features
from orchestrator.learning.responses import answer_key, response_surface
from orchestrator.routing.table import OutcomeTable

Embedder = Callable[[list[str]], np.ndarray]


def default_embedder(texts: list[str]) -> np.ndarray:
    """The shared, disk-cached MiniLM embedding (imported lazily: it loads a model)."""
    from orchestrator.embedding import embed

    return embed(texts)


@dataclass(frozen=True)
class PoolContext:
    """A pool as the policy knows it: its pairs and their calibration statistics."""

    infos: list[PairInfo]
    calibration: Calibration


def make_context(
    calib_table: OutcomeTable,
    embeddings: np.ndarray,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    *,
    predictor: bool = True,
) -> PoolContext:
    """Calibrate a pool on the outcomes of `calib_table` (whose rows `embeddings` embed).

    `predictor=False`: the per-item accuracy is the plain kNN one (see `calibration.calibrate`).
    """
    calibration = calibrate(embeddings, calib_table.domains, calib_table.score, calib_table.cost, predictor=predictor)
    infos = pair_infos(calib_table.pairs, prices)
    known = ~np.isnan(calib_table.cost)
    tokens = np.nansum(np.where(known, calib_table.tokens_in + calib_table.tokens_out, 0.0), axis=0)
    spent = np.nansum(np.where(known, calib_table.cost, 0.0), axis=0)
    for j, info in enumerate(infos):
        if info.input_per_mtok is None and info.output_per_mtok is None and tokens[j] > 0:
            # No listed price: the blended $/Mtok the calibration items paid, in both slots.
            blended = float(spent[j] / tokens[j] * 1e6)
            infos[j] = replace(info, input_per_mtok=blended, output_per_mtok=blended)
    return PoolContext(infos=infos, calibration=calibration)


def answer_ids(responses: Sequence[Sequence[str | None]], executed_only: np.ndarray | None = None) -> np.ndarray:
    """int64 [n, p]: equal ids for equal normalized answers of an item; a unique negative id where none."""
    n = len(responses)
    p = len(responses[0]) if n else 0
    ids = -1 - np.tile(np.arange(p, dtype=np.int64), (n, 1))
    for i, row in enumerate(responses):
        seen: dict[str, int] = {}
        for j, response in enumerate(row):
            if executed_only is not None and not executed_only[i, j]:
                continue
            key = answer_key(response)
            if key is not None:
                ids[i, j] = seen.setdefault(key, len(seen))
    return ids


def surfaces(responses: Sequence[Sequence[str | None]]) -> np.ndarray:
    """float32 [n, p, 4] response surface features."""
    return np.array([[response_surface(r) for r in row] for row in responses], dtype=np.float32).reshape(
        len(responses), len(responses[0]) if responses else 0, 4
    )


def encode(
    table: OutcomeTable,
    embeddings: np.ndarray,
    context: PoolContext,
    *,
    with_outcomes: bool,
    exclude_self: bool = False,
) -> EpisodeBatch:
    """Episode tensors for the rows of `table` in the pool of `context` (same columns)."""
    calib = context.calibration
    domains = known_domains(calib, embeddings, table.domains)
    feats = pair_features(context.infos, calib, embeddings, domains, exclude_self=exclude_self)
    dom_cost = calib.domain_cost[domain_indices(domains)]  # [n, p]: never the item's own recorded cost
    n, p = table.n_items, table.n_pairs
    available = ~np.isnan(table.score) & ~np.isnan(table.cost) if with_outcomes else _routable(table)
    batch = EpisodeBatch(
        task=torch.from_numpy(task_features(embeddings, domains)),
        pairs=torch.from_numpy(feats),
        available=torch.from_numpy(available),
        cost_est=torch.from_numpy((dom_cost / calib.cost_ref).astype(np.float32)),
        answers=torch.full((n, p), -1, dtype=torch.long) - torch.arange(p).expand(n, p),
        surface=torch.zeros(n, p, 4),
        calibration_items=int(calib.embeddings.shape[0]),
    )
    if with_outcomes:
        batch.answers = torch.from_numpy(answer_ids(table.responses))
        batch.surface = torch.from_numpy(surfaces(table.responses))
        batch.score = torch.from_numpy(np.nan_to_num(table.score).astype(np.float32))
        batch.cost = torch.from_numpy((np.nan_to_num(table.cost) / calib.cost_ref).astype(np.float32))
    return batch


def _routable(table: OutcomeTable) -> np.ndarray:
    """bool [n, p]: the pairs a router may call on each item (the table's availability)."""
    available: np.ndarray = table.available()
    return available
