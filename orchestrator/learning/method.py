"""The learned policy as a routing `Method`: fit = SFT then RL on train; route = greedy episodes at λ.

Routing an item is an episode: the policy calls a pair, reads what came back (its
response, through `executed_response`, judged by the reliability head and compared with
other executed answers), and either finishes or calls another pair: a repair when the
answer looks wrong, or a cheap second opinion. Every call is counted in the cost. The
answer that counts is the executed one the reliability head trusts most.

For an unseen pool (`probe` given), pair features are calibrated on the probe items, so
the network trained on the train pool scores pairs it never saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from orchestrator.configs import STRICT_KEYS, Count, NonNegative, from_mapping
from orchestrator.learning.cascade import fit_gates
from orchestrator.learning.dataset import Embedder, PoolContext, default_embedder, encode, make_context
from orchestrator.learning.decompose import DecomposeConfig
from orchestrator.learning.ensemble import UnseenConfig
from orchestrator.learning.episode import EpisodeBatch, preset_bound, rollout
from orchestrator.learning.fit import train_network
from orchestrator.learning.holdout import Holdout, HoldoutConfig, hold_out
from orchestrator.learning.model import PolicyConfig, PolicyNet
from orchestrator.learning.responses import answer_key, response_surface
from orchestrator.learning.rl import RLConfig
from orchestrator.learning.sft import SFTConfig
from orchestrator.outcomes import read_prices
from orchestrator.routing.methods import CASCADE_OFFSET, Routes, executed_response
from orchestrator.routing.table import OutcomeTable

if TYPE_CHECKING:
    from orchestrator.offline.shell import TableRuns

# λ prices cost in units of the pool's most expensive pair: 0 = accuracy only, 2 = cost dominates.
DEFAULT_KNOBS = (
    *(0.0, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.045, 0.05, 0.057, 0.065, 0.072, 0.08, 0.09),
    *(0.1, 0.11, 0.12, 0.135, 0.15, 0.175, 0.2, 0.25, 0.3, 0.35, 0.42, 0.5, 0.6, 0.7, 0.85, 1.0, 1.4, 2.0, 3.0, 5.0),
)


# λ values at which the frontier also has an agreement-cascade point (`learning.cascade`).
CASCADE_KNOBS = (0.01, 0.02, 0.035, 0.05, 0.08, 0.12, 0.2, 0.35, 0.5)


@dataclass(frozen=True)
class LearnedConfig:
    """Everything `LearnedMethod` trains with."""

    __pydantic_config__ = STRICT_KEYS

    policy: PolicyConfig = field(default_factory=PolicyConfig)  # network sizes
    sft: SFTConfig = field(default_factory=SFTConfig)  # supervised stage
    rl: RLConfig = field(default_factory=RLConfig)  # GRPO stage
    knobs: tuple[NonNegative, ...] = DEFAULT_KNOBS  # λ values swept for the frontier
    cascade_knobs: tuple[NonNegative, ...] = CASCADE_KNOBS  # λ values also run as an agreement cascade
    prices: str | None = None  # a prices.json for the price features (else derived from calibration)
    threads: Count = 1  # torch CPU threads (small MLPs: more threads mostly contend)
    holdout: HoldoutConfig = field(default_factory=HoldoutConfig)  # for an unseen pool: what training holds out
    unseen: UnseenConfig = field(default_factory=UnseenConfig)  # for an unseen pool: networks on shares of the items
    decompose: DecomposeConfig = field(default_factory=DecomposeConfig)  # the decompose head on composites

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None) -> LearnedConfig:
        """From a plain dict: {"sft": {...}, "rl": {...}, "policy": {...}, "knobs": [...], ...};
        `configs.ConfigError` names what does not fit."""
        return from_mapping(cls, config)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LearnedMethod:
    """The learned orchestrator, evaluated like any router (`python -m orchestrator.evaluate`)."""

    name = "learned"

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        embedder: Embedder | None = None,
        extra_trajectories: list[dict[str, Any]] | None = None,
        checkpoint: Path | None = None,
    ) -> None:
        self.config = LearnedConfig.from_mapping(config)
        self.checkpoint = checkpoint  # fit loads it (network and calibration) instead of training
        self.embedder = embedder or default_embedder
        self.extra_records = extra_trajectories or []
        self.net: PolicyNet | None = None
        self.context: PoolContext | None = None
        self.metrics: dict[str, float] = {}
        self._embedded: dict[int, np.ndarray] = {}
        self._train: tuple[OutcomeTable, EpisodeBatch] | None = None  # for the cascade's gate
        self._gates: dict[float, dict[str, tuple[int, int]]] = {}
        self._unseen = False  # calibrated on a probe of a pool the network never saw: no cascade
        self._runs: TableRuns | None = None  # the last test table's runs

    def _embed(self, table: OutcomeTable) -> np.ndarray:
        key = hash(tuple(table.prompts))
        if key not in self._embedded:
            self._embedded[key] = np.asarray(self.embedder(list(table.prompts)), dtype=np.float32)
        return self._embedded[key]

    def _prices(self) -> dict[str, dict[str, float]] | None:
        return read_prices(Path(self.config.prices)) if self.config.prices else None

    def fit(self, train: OutcomeTable, *, seed: int, probe: OutcomeTable | None = None) -> None:
        torch.set_num_threads(self.config.threads)
        torch.manual_seed(seed)
        emb = self._embed(train)
        if self.checkpoint is not None:
            self._load(train, emb, probe)
            return
        fitted, fitted_emb, holdout = train, emb, None
        if probe is not None:
            # For an unseen pool: some models and items held out, to stop training where the
            # policy does best on models it never saw (`learning.holdout`).
            held = self.config.holdout
            steps, prices = self.config.sft.max_steps, self._prices()
            fitted, fitted_emb, holdout = hold_out(train, emb, held, seed=seed, max_steps=steps, prices=prices)
        net, batch, context, self.metrics = self._train_on(fitted, fitted_emb, self.config, seed, probe, holdout)
        if holdout is not None and self.config.holdout.refit:
            # Again on every item and model, for as long as the held-out pools chose.
            found = {key: value for key, value in self.metrics.items() if key.startswith("holdout/")}
            sft = replace(self.config.sft, epochs=int(found.get("holdout/sft_epochs", self.config.sft.epochs)))
            rl = replace(self.config.rl, iterations=int(found.get("holdout/rl_updates", self.config.rl.iterations)))
            config = replace(self.config, sft=sft, rl=rl)
            fitted = train
            net, batch, context, self.metrics = self._train_on(train, emb, config, seed, probe, None)
            self.metrics |= found
        self.net = net
        self._train, self._gates = (fitted, batch), {}
        self.context = context if probe is None else make_context(probe, self._embed(probe), self._prices())
        self._unseen = probe is not None

    @property
    def knobs(self) -> tuple[float, ...]:
        """The λ values of the frontier, and the agreement cascade's where its gate applies: not
        on an unseen pool, whose pairs the gate (fit on the train items' pairs) never saw (issue 47:
        there a single pair or the zero router beat cascade points in 4 of 6 protocol splits)."""
        cascade = () if self._unseen else tuple(CASCADE_OFFSET + k for k in self.config.cascade_knobs)
        return self.config.knobs + cascade

    def _train_on(
        self,
        train: OutcomeTable,
        emb: np.ndarray,
        config: LearnedConfig,
        seed: int,
        probe: OutcomeTable | None,
        holdout: Holdout | None,
    ) -> tuple[Any, EpisodeBatch, PoolContext, dict[str, float]]:
        """A network trained on `train`: (it, the train episodes, their calibration, metrics)."""
        return train_network(
            train, emb, config, seed=seed, unseen=probe is not None, prices=self._prices(),
            extra_records=self.extra_records, holdout=holdout,
        )  # fmt: skip

    def adopt(
        self, train: OutcomeTable, emb: np.ndarray, trained: tuple[Any, EpisodeBatch, PoolContext, dict[str, float]]
    ) -> None:
        """Take a network trained outside (`train_network`'s result on `train`, whose rows `emb`
        embeds: what train_policy trains) as if `fit` had trained it."""
        net, batch, context, metrics = trained
        self.net, self.context, self.metrics = net, context, dict(metrics)
        self._train, self._gates = (train, batch), {}
        self._embedded[hash(tuple(train.prompts))] = emb

    def calibrate(self, probe: OutcomeTable) -> None:
        """Calibrate the fitted network on another probe of the same unseen pool (no new training:
        with a probe, training does not depend on which probe it is)."""
        if self.net is None:
            raise RuntimeError("fit the method before calibrating it")
        self.context = make_context(probe, self._embed(probe), self._prices())

    def _load(self, train: OutcomeTable, emb: np.ndarray, probe: OutcomeTable | None) -> None:
        """The checkpoint's network and the calibration it carries, as `policies.learned` loads
        them; its episode length; the train items' episodes for the cascade's gate."""
        from orchestrator.learning.context_io import context_from_payload
        from orchestrator.learning.model import load_checkpoint

        assert self.checkpoint is not None
        net, payload = load_checkpoint(self.checkpoint)
        if "context" not in payload:
            raise ValueError(f"{self.checkpoint} carries no calibration (trained before they did): train it again")
        context = context_from_payload(payload["context"])
        steps = payload.get("train", {}).get("sft", {}).get("max_steps")
        if steps is not None:
            self.config = replace(self.config, sft=replace(self.config.sft, max_steps=int(steps)))
        self.net, self.metrics = net, dict(payload.get("metrics", {}))
        # The cascade's gate is fit on the train items: leave-one-out where they are the calibration items.
        own = context.calibration.embeddings.shape[0] == train.n_items
        self._train, self._gates = (train, encode(train, emb, context, with_outcomes=True, exclude_self=own)), {}
        self.context = context if probe is None else make_context(probe, self._embed(probe), self._prices())
        self._unseen = probe is not None

    def episodes(self, items: OutcomeTable | None = None) -> tuple[OutcomeTable, EpisodeBatch]:
        """(items, their episode tensors) as the fitted policy sees them: `items` at route time,
        calibrated on the pool's calibration; or, for None, the training items as training saw
        them (leave-one-out kNN, out-of-fold predictor), with their outcomes. A fresh copy:
        routing fills in responses as pairs execute."""
        if self.net is None or self.context is None or self._train is None:
            raise RuntimeError("fit the method before asking for its episodes")
        if items is None:
            train, batch = self._train
            return train, batch.rows(torch.arange(train.n_items))
        return items, encode(items, self._embed(items), self.context, with_outcomes=False)

    def route(self, test: OutcomeTable, *, knob: float | None = None) -> Routes:
        if self.net is None or self.context is None:
            raise RuntimeError("fit the method before routing")
        lam = float(knob if knob is not None else self.config.knobs[len(self.config.knobs) // 2])
        cascade = None
        if lam >= CASCADE_OFFSET:
            lam -= CASCADE_OFFSET
            # on an unseen pool the cascade is off (`knobs`): its knob is the plain λ, as in a live run
            cascade = None if self._unseen else self._gate(lam)
        return self._route_core(test, lam, cascade)

    def _route_core(self, test: OutcomeTable, lam: float, cascade: dict[str, tuple[int, int]] | None) -> Routes:
        """Each item as a run of the orchestration core, all in lockstep (`offline.shell.run_many`),
        decided by the runtime learned policy on this network and calibration (with the agreement
        cascade's gate where given): the decisions a live run makes."""
        from orchestrator.offline.shell import TableRuns, table_pairs

        if self._runs is None or self._runs.table is not test:  # the runs of one test table, made once for every λ
            self._runs = TableRuns(test, table_pairs(test, self._prices()))
        vectors = dict(zip(test.prompts, self._embed(test), strict=True))
        policy = self.runtime_policy(lam, cascade=cascade, embedder=lambda texts: np.stack([vectors[t] for t in texts]))
        with torch.no_grad():
            routes, _ = self._runs.route(policy, lam=lam)
        return routes

    def runtime_policy(
        self,
        lam: float,
        *,
        cascade: dict[str, tuple[int, int]] | None = None,
        embedder: Embedder | None = None,
        decides_composites: bool = False,
        reward_model: str | None = None,
        best_of_cost: float | None = None,
    ) -> Any:
        """The runtime learned policy (`policies.learned.LearnedPolicy`) on this fitted network
        and calibration at λ: what a live run decides with (`decides_composites`: its decompose
        head was trained on composite decisions; `reward_model`: an OrchRM checkpoint for best-of-N,
        `best_of_cost`: the weight of estimated cost in its scoring of composite plans)."""
        from orchestrator.policies.learned import LearnedPolicy
        from orchestrator.policies.learned_loading import LearnedPolicyConfig, LoadedPolicy

        if self.net is None or self.context is None:
            raise RuntimeError("fit the method before asking for its runtime policy")
        columns = {(info.model, info.primitive): j for j, info in enumerate(self.context.infos)}
        loaded = LoadedPolicy(
            net=self.net.eval(),
            context=self.context,
            columns=columns,
            max_steps=self.config.sft.max_steps,
            decides_composites=decides_composites,
        )
        return LearnedPolicy(
            LearnedPolicyConfig(
                checkpoint="<in memory>",
                cost_preference=lam,
                cascade=cascade,
                reward_model=reward_model,
                best_of_cost=best_of_cost,
            ),
            embedder=embedder or self.embedder,
            loaded=loaded,
        )

    def cascade_gate(self, knob: float) -> dict[str, tuple[int, int]] | None:
        """The agreement cascade's gate at a cascade knob; None at a plain λ."""
        return self._gate(knob - CASCADE_OFFSET) if knob >= CASCADE_OFFSET else None

    def _gate(self, lam: float) -> dict[str, tuple[int, int]]:
        """The agreement cascade's gate at λ, fit on the training items (batched: training's path)."""
        assert self.net is not None and self._train is not None
        if lam not in self._gates:
            train, batch = self._train
            steps = self.config.sft.max_steps
            self._gates |= fit_gates(self.net, batch, train.benchmarks, train.responses, [lam], steps)
        return self._gates[lam]


def route_batch(net: PolicyNet, batch: EpisodeBatch, test: OutcomeTable, lam: float, *, max_steps: int) -> Routes:
    """Greedy episodes on items whose outcomes training knows (the decompose head's training
    choices, `composite.learned`); each executed pair's response is read only once it is
    executed. The evaluation routes through the core (`route`), which decides the same."""
    seen: list[dict[str, int]] = [{} for _ in range(test.n_items)]

    def reveal(chosen: torch.Tensor) -> None:
        for i in torch.nonzero(chosen >= 0).flatten().tolist():
            j = int(chosen[i])
            response = executed_response(test, i, j)
            key = answer_key(response)
            if key is not None:
                batch.answers[i, j] = seen[i].setdefault(key, len(seen[i]))
            batch.surface[i, j] = torch.from_numpy(response_surface(response))

    with torch.no_grad():
        out = rollout(
            net, batch, torch.full((test.n_items,), lam), max_steps=max_steps, mode="greedy", reveal=reveal,
            bound=preset_bound(batch, lam),
        )  # fmt: skip
    executed = [tuple(calls) for calls in out.order]
    return Routes(executed=executed, final=[int(j) for j in out.final.tolist()])
