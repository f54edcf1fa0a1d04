"""A text that names no domain (a /v1 request's) takes its nearest calibration items' domain,
live and offline alike, instead of the first domain's statistics."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from orchestrator.core.protocol import Budget, NodeView, Observation
from orchestrator.learning.calibration import calibrate, known_domains
from orchestrator.learning.context_io import context_payload
from orchestrator.learning.dataset import encode, make_context
from orchestrator.learning.model import PolicyConfig, PolicyNet, save_checkpoint
from orchestrator.offline.shell import table_pairs
from orchestrator.outcomes import DOMAINS
from orchestrator.policies import make_policy
from orchestrator.policies.learned import LearnedPolicy
from tests.orchestrator.synthetic_outcomes import synthetic_table


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_an_unknown_domain_takes_the_domain_of_its_nearest_calibration_items() -> None:
    rng = np.random.default_rng(0)
    math_centre, code_centre = np.eye(8)[0], np.eye(8)[1]
    calib_emb = _unit(
        np.vstack([math_centre + 0.1 * rng.normal(size=(12, 8)), code_centre + 0.1 * rng.normal(size=(12, 8))])
    )
    calib = calibrate(calib_emb, ["math"] * 12 + ["code"] * 12, rng.random((24, 3)), np.ones((24, 3)), predictor=False)
    asked = _unit(
        np.vstack([code_centre + 0.05 * rng.normal(size=8), math_centre + 0.05 * rng.normal(size=8), code_centre])
    )

    assert known_domains(calib, asked, ["", "not-a-domain", "chat"]) == ["code", "math", "chat"]  # a known one stays
    assert known_domains(replace(calib, domains=()), asked, ["", "", ""]) == ["", "", ""]  # no domains kept: as before
    # only items with a domain vote: the code items unnamed, a code-like text takes math
    unnamed = replace(calib, domains=("math",) * 12 + ("",) * 12)
    assert unnamed.domain_rows.tolist() == [DOMAINS.index("math")] * 12 + [-1] * 12
    assert known_domains(unnamed, asked[:1], [""]) == ["math"]


def test_a_calibration_derives_what_each_decision_reads_once() -> None:
    score = np.array([[1.0, np.nan], [0.0, 1.0]])
    calib = calibrate(np.eye(2, dtype=np.float32), ["math", "chat"], score, np.ones((2, 2)), predictor=False)
    assert calib.known.tolist() == [[True, False], [True, True]]
    assert calib.filled.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    changed = replace(calib, score=np.array([[np.nan, 0.0], [1.0, 1.0]]))  # derived again from the new fields
    assert changed.known.tolist() == [[False, True], [True, True]] and changed.filled[0].tolist() == [0.0, 0.0]


def test_the_live_policy_infers_the_domain_as_the_evaluation_encodes_it(tmp_path: Path) -> None:
    table, emb = synthetic_table(n=60, seed=0)
    vectors = dict(zip(table.prompts, emb, strict=True))
    context = make_context(table, emb)
    torch.manual_seed(0)
    path = tmp_path / "untrained.pt"
    save_checkpoint(path, PolicyNet(PolicyConfig(hidden=16)).eval(), extra={"context": context_payload(context)})
    policy = make_policy(
        "learned", {"checkpoint": str(path), "embedder": lambda texts: np.stack([vectors[t] for t in texts])}
    )
    assert isinstance(policy, LearnedPolicy)
    bare = replace(table, domains=[""] * table.n_items)
    expected = encode(bare, emb, context, with_outcomes=False)
    pairs = table_pairs(table)
    inferred = known_domains(context.calibration, emb, bare.domains)
    assert inferred != bare.domains and set(inferred) <= set(table.domains)
    for i in range(6):
        node = NodeView(key="root", kind="root", text=table.prompts[i], status="ready", depth=0)
        observation = Observation(
            task_text=table.prompts[i], decomposable=False, nodes=(node,), budget_left=Budget(), pairs=pairs
        )
        episode = policy.episode(node, observation, pairs)
        assert torch.equal(episode.batch.pairs[0], expected.pairs[i])
        assert torch.equal(episode.batch.task[0], expected.task[i])
