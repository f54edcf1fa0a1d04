"""The policy network: masking, checkpoints, and the pair features it is fed."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.learning.calibration import BLEND_GRID, MF_MIN_ITEMS, calibrate, item_accuracy
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.episode import EpisodeBatch, reliability, response_features, rollout
from orchestrator.learning.features import PAIR_DIM, model_family, model_size_b
from orchestrator.learning.model import PolicyConfig, PolicyNet, load_checkpoint, save_checkpoint
from orchestrator.learning.responses import answer_key
from tests.orchestrator.synthetic_outcomes import synthetic_table


@pytest.mark.parametrize(
    ("name", "size", "family"),
    [
        ("meta/llama-2-70b-chat", 70.0, "llama"),
        ("mistralai/mixtral-8x7b-chat", 56.0, "mixtral"),
        ("zero-one-ai/Yi-34B-Chat", 34.0, "yi"),
        ("llama-3.1-8b-instruct", 8.0, "llama"),
        ("gpt-4-1106-preview", None, "gpt"),
        ("claude-v2", None, "claude"),
        ("some-new-model", None, "other"),
    ],
)
def test_size_and_family_parsed_from_names(name: str, size: float | None, family: str) -> None:
    assert model_size_b(name) == size
    assert model_family(name) == family


def test_answer_key_normalizes_choices() -> None:
    assert answer_key("B\n") == answer_key("B) Logan") == answer_key("The answer is B.") == "B"
    assert answer_key("A") != answer_key("B")
    assert answer_key(None) is None


def _batch(seed: int = 0) -> EpisodeBatch:
    table, emb = synthetic_table(n=64, seed=seed)
    context = make_context(table, emb)
    return encode(table, emb, context, with_outcomes=True, exclude_self=True)


def test_pair_features_do_not_depend_on_a_fixed_pool() -> None:
    table, emb = synthetic_table(n=64)
    context = make_context(table.columns([2, 0]), emb)
    batch = encode(table.columns([2, 0]), emb, context, with_outcomes=False)
    assert batch.pairs.shape == (64, 2, PAIR_DIM)


def test_masked_pair_is_never_chosen() -> None:
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32))
    batch = _batch()
    rng = np.random.default_rng(0)
    allowed = torch.from_numpy(rng.random(batch.available.shape) < 0.5)
    allowed[:, 1] = True  # every item keeps at least one pair
    batch.available = allowed
    gen = torch.Generator().manual_seed(0)
    chosen = torch.zeros_like(allowed)
    for _ in range(20):
        out = rollout(net, batch, torch.rand(64), max_steps=3, mode="sample", generator=gen)
        chosen |= out.executed
        assert not (out.executed & ~allowed).any()
        assert bool(((out.final >= 0) & allowed.gather(1, out.final.clamp(min=0).unsqueeze(1)).squeeze(1)).all())
    # Sampling did reach the allowed pairs (so the check above had something to catch).
    assert bool((chosen == allowed).float().mean() > 0.9)
    logits = net.action_logits(
        net.encode_task(batch.task),
        torch.zeros(64, 9),
        torch.zeros(64),
        batch.pairs,
        torch.zeros(64, 3, 5),
        allowed,
        torch.zeros(64, dtype=torch.bool),
    )
    assert torch.isinf(logits[:, :3][~allowed]).all() and torch.isinf(logits[:, 3]).all()


def test_the_heads_shortcuts_compute_the_plain_functions() -> None:
    """pair_scores applies pair_head's first layer in two blocks, and reliability() runs only the
    executed cells: both must give what the plain, concatenated forms give."""
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=32))
    batch = _batch()
    b, p, _ = batch.pairs.shape
    context = torch.randn(b, 32 + 9 + 2)
    per_pair = torch.cat([batch.pairs, torch.randn(b, p, 5)], dim=-1)
    plain = net.pair_head(torch.cat([context.unsqueeze(1).expand(b, p, -1), per_pair], dim=-1)).squeeze(-1)
    torch.testing.assert_close(net.pair_scores(context, per_pair), plain)

    executed = torch.from_numpy(np.random.default_rng(0).random((b, p)) < 0.4)
    executed[0] = False  # an item with nothing executed yet
    expected = torch.sigmoid(net.reliability_logits(batch.task, batch.pairs, response_features(batch, executed)))
    got = reliability(net, batch, executed)
    torch.testing.assert_close(got, expected * executed.float())
    assert bool((got[executed] > 0).all()) and not got[0].any()
    assert not reliability(net, batch, torch.zeros_like(executed)).any()


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = PolicyNet(PolicyConfig(hidden=16))
    path = tmp_path / "policy.pt"
    save_checkpoint(path, net, extra={"metrics": {"eval/reward": 0.5}, "train": {"seed": 0}})
    payload = torch.load(path, map_location="cpu", weights_only=True)  # plain data only
    assert payload["metrics"] == {"eval/reward": 0.5}
    loaded, extra = load_checkpoint(path)
    assert extra["train"] == {"seed": 0}
    batch = _batch()
    with torch.no_grad():
        a = net.reliability_logits(batch.task, batch.pairs, torch.zeros(64, 3, 9))
        b = loaded.reliability_logits(batch.task, batch.pairs, torch.zeros(64, 3, 9))
    assert torch.equal(a, b)


def test_a_checkpoint_names_its_embedding_and_an_older_one_is_flagged(tmp_path: Path, caplog) -> None:
    path = tmp_path / "policy.pt"
    save_checkpoint(path, PolicyNet(PolicyConfig(hidden=8)), extra={})
    assert torch.load(path, weights_only=True)["embedding"] == EMBEDDING_ID == "all-MiniLM-L6-v2-head+question"
    with caplog.at_level(logging.WARNING, logger="orchestrator.embedding"):
        load_checkpoint(path)
        assert not caplog.records
        payload = torch.load(path, weights_only=True)
        del payload["embedding"]  # saved before texts were read by their end
        torch.save(payload, path)
        load_checkpoint(path)
    assert "texts read from their start" in caplog.text and "train it again" in caplog.text


def test_item_predictor_learns_a_per_item_signal_out_of_fold() -> None:
    # Pair 0 is right exactly on items whose first embedding coordinate is positive; pair 1 never.
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(MF_MIN_ITEMS + 40, 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    score = np.stack([(emb[:, 0] > 0).astype(np.float64), np.zeros(len(emb))], axis=1)
    cost = np.ones_like(score)
    calib = calibrate(emb, ["reasoning"] * len(emb), score, cost)
    assert calib.predictor is not None and calib.oof is not None and calib.blend in BLEND_GRID
    assert calib.oof.shape == score.shape
    # Out of fold, the predictor still separates the items pair 0 gets right from the rest.
    assert calib.oof[emb[:, 0] > 0.3, 0].mean() > calib.oof[emb[:, 0] < -0.3, 0].mean() + 0.3
    prior = np.tile(calib.global_acc, (len(emb), 1))
    loo = item_accuracy(calib, emb, ["reasoning"] * len(emb), prior, exclude_self=True)
    fresh = item_accuracy(calib, emb, ["reasoning"] * len(emb), prior, exclude_self=False)
    assert loo.shape == fresh.shape == score.shape
    assert np.all((loo >= 0) & (loo <= 1))
    # A probe-sized calibration set gets no predictor: the kNN accuracy alone.
    small = calibrate(emb[:50], ["reasoning"] * 50, score[:50], cost[:50])
    assert small.predictor is None and small.blend == 0.0
    # Training for an unseen pool (probe-calibrated at test time): the plain kNN feature, as on the probe.
    plain = calibrate(emb, ["reasoning"] * len(emb), score, cost, predictor=False)
    assert plain.predictor is None
