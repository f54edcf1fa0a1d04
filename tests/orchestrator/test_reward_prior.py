"""OrchRM's accuracy prior (`reward.prior`) and the anchor term of the reward network."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from orchestrator.learning.dataset import make_context
from orchestrator.learning.features import task_features
from orchestrator.reward.features import PLAN_ACC, PLAN_DIM, table_plan_features
from orchestrator.reward.model import RewardConfig, RewardModel, RewardNet, save_reward_model
from orchestrator.reward.plans import Plan
from orchestrator.reward.prior import MIN_ITEMS, AccuracyPrior, fit_prior, logit, table_prior
from orchestrator.routing.table import OutcomeTable
from tests.orchestrator.synthetic_outcomes import synthetic_table


def two_family_table(n: int, seed: int) -> tuple[OutcomeTable, np.ndarray]:
    """The synthetic table with its easy items in family "easy" and the rest in "hard"."""
    table, emb = synthetic_table(n=n, seed=seed)
    return replace(table, benchmarks=["easy" if e > 0 else "hard" for e in emb[:, 0]]), emb


def test_the_prior_learns_which_pair_is_right_on_which_items() -> None:
    table, emb = two_family_table(400, seed=0)
    prior = table_prior(table, emb, seed=0)
    assert prior is not None and prior.families == ("easy", "hard")
    held, held_emb = two_family_table(200, seed=1)
    tasks = task_features(held_emb, held.domains)
    easy = held_emb[:, 0] > 0
    family = np.asarray(prior.families)[prior.family_probs(tasks).argmax(axis=1)]
    assert (family == np.where(easy, "easy", "hard")).mean() > 0.9
    p = prior.predict(tasks)
    assert p.shape == (200, 3) and ((p > 0) & (p < 1)).all()
    # the cheap pair is right on 90% of easy items and 10% of hard ones
    assert p[easy, 2].mean() > 0.75 and p[~easy, 2].mean() < 0.3
    assert p[~easy, 0].mean() > p[~easy, 1].mean() > p[~easy, 2].mean()
    # its out-of-fold estimates on the fit items carry the same signal, never their own outcome
    assert prior.oof is not None and prior.oof.shape == (400, 3)
    fit_easy = emb[:, 0] > 0
    assert prior.oof[fit_easy, 2].mean() > 0.7 and prior.oof[~fit_easy, 2].mean() < 0.3


def test_the_prior_needs_enough_items_and_survives_a_checkpoint_round_trip() -> None:
    table, emb = synthetic_table(n=MIN_ITEMS - 1, seed=0)
    assert table_prior(table, emb) is None
    table, emb = synthetic_table(n=MIN_ITEMS, seed=0)
    tasks = task_features(emb, table.domains)
    prior = fit_prior(tasks, table.benchmarks, table.score, seed=0)
    assert prior is not None and prior.families == ("synthetic",)
    again = AccuracyPrior.from_payload(prior.payload())
    assert again.oof is None
    assert np.allclose(again.predict(tasks), prior.predict(tasks))


def test_with_a_prior_the_accuracy_feature_is_the_logit_mean_of_it_and_the_calibration() -> None:
    table, emb = two_family_table(300, seed=0)
    context = make_context(table, emb)
    prior = table_prior(table, emb, seed=0)
    assert prior is not None

    def mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        result: np.ndarray = 1 / (1 + np.exp(-(logit(a) + logit(b)) / 2))
        return result

    without = table_plan_features(context, emb[:5], table.domains[:5])
    plans = table_plan_features(context, emb[:5], table.domains[:5], prior=prior)
    expected = mean(prior.predict(task_features(emb[:5], table.domains[:5])), without[..., PLAN_ACC])
    assert np.allclose(plans[..., PLAN_ACC], expected, atol=1e-5)
    assert not np.allclose(without[..., PLAN_ACC], expected, atol=1e-3)
    # on the fit items themselves both estimates are out of fold
    fit_without = table_plan_features(context, emb, table.domains, exclude_self=True)
    fit = table_plan_features(context, emb, table.domains, exclude_self=True, prior=prior)
    assert prior.oof is not None
    assert np.allclose(fit[..., PLAN_ACC], mean(prior.oof, fit_without[..., PLAN_ACC]), atol=1e-5)


def test_the_anchor_starts_the_score_at_the_logit_of_the_accuracy_estimate() -> None:
    plans = torch.zeros(4, PLAN_DIM)
    plans[:, PLAN_ACC] = torch.tensor([0.1, 0.5, 0.9, 0.99])
    net = RewardNet(RewardConfig(hidden=8))
    logit = torch.log(plans[:, PLAN_ACC] / (1 - plans[:, PLAN_ACC]))
    assert torch.allclose(net.anchor_term(plans), logit)
    assert RewardNet(RewardConfig(hidden=8, anchor=False)).anchor_term(plans) == 0.0


def test_a_reward_model_with_a_prior_saves_loads_and_scores_the_same(tmp_path) -> None:
    table, emb = two_family_table(300, seed=0)
    context = make_context(table, emb)
    prior = table_prior(table, emb, seed=0)
    net = RewardNet(RewardConfig(hidden=8, accuracy_prior=True)).eval()
    path = tmp_path / "rm.pt"
    save_reward_model(path, net, context, prior=prior, extra={"metrics": {}, "lineage": {}})
    model = RewardModel.load(path)
    assert model.prior is not None and model.prior.families == ("easy", "hard")
    plans = [Plan.single("mistral-7b-chat", "direct")] * 3
    scored = model.score(emb[:3], table.domains[:3], plans)
    with torch.no_grad():
        direct = net(
            torch.from_numpy(task_features(emb[:3], table.domains[:3])),
            torch.from_numpy(table_plan_features(context, emb[:3], table.domains[:3], prior=prior)[:, 2]),
            torch.zeros(3),
        )
    assert np.allclose(scored, direct.double().numpy(), atol=1e-5)


def test_a_checkpoint_saved_before_the_anchor_and_prior_options_loads_without_them(tmp_path) -> None:
    table, emb = synthetic_table(n=60, seed=0)
    context = make_context(table, emb)
    path = tmp_path / "old.pt"
    save_reward_model(path, RewardNet(RewardConfig(hidden=8, anchor=False)), context, extra={"metrics": {}})
    payload = torch.load(path, weights_only=True)
    del payload["config"]["anchor"], payload["config"]["accuracy_prior"]  # as written before the options existed
    del payload["pool"]["prior"]
    torch.save(payload, path)
    model = RewardModel.load(path)
    assert not model.net.config.anchor and not model.net.config.accuracy_prior and model.prior is None
    assert np.isfinite(model.score(emb[:1], ["math"], [Plan.single("gpt-4", "direct")])).all()
