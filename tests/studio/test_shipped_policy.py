"""The demo policy shipped with the repository (`orchestrator.ship_policy`): a fresh install
takes it as the default policy at once, where it was built from this install's outcomes;
a stale or missing one leaves the demo policy to be trained, as before."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.ship_policy import SHIPPED, fingerprint, shipped_demo
from studio.models import Checkpoint, JobStatus, Role
from studio.services.bootstrap import demo_policy_ensure
from studio.services.policies import default_policy

pytestmark = pytest.mark.django_db


def fake_shipped(folder: Path, *, outcomes: Path) -> Path:
    """A 'checkpoint' file and its manifest, fingerprinted as `ship_policy.build` would."""
    path = folder / "demo-policy.pt"
    path.write_bytes(b"weights")
    manifest = {
        "fingerprint": fingerprint(outcomes),
        "sha256": hashlib.sha256(b"weights").hexdigest(),
        "config": {"seed": 0, "embedding": EMBEDDING_ID, "calibration": True},
        "lineage": {"outcomes": ["routerbench.jsonl.gz"], "shipped": True},
        "metrics": {"eval/reward_rl": 0.5},
    }
    path.with_suffix(".json").write_text(json.dumps(manifest))
    return path


def test_a_fresh_install_takes_the_shipped_demo_policy(make_user, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path / "data"
    settings.ORCHESTRA_SHIPPED_POLICY = str(fake_shipped(tmp_path, outcomes=Path(settings.OUTCOMES_DIR)))
    admin = make_user(Role.ADMIN)
    job = demo_policy_ensure(user=admin)
    assert job is not None and job.status == JobStatus.SUCCEEDED and job.config["shipped"] is True
    checkpoint = Checkpoint.objects.get(kind="policy")
    assert checkpoint.is_default and job.checkpoint == checkpoint and default_policy() == "learned"
    assert (Path(settings.DATA_DIR) / checkpoint.path).read_bytes() == b"weights"
    assert checkpoint.metrics == {"eval/reward_rl": 0.5} and checkpoint.lineage["shipped"] is True
    assert demo_policy_ensure(user=admin) is None  # installed once


def test_a_stale_shipped_policy_is_trained_instead(make_user, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path / "data"
    shipped = fake_shipped(tmp_path, outcomes=Path(settings.OUTCOMES_DIR))
    manifest = json.loads(shipped.with_suffix(".json").read_text())
    manifest["fingerprint"]["seed"] = 1  # built otherwise than the demo job trains
    shipped.with_suffix(".json").write_text(json.dumps(manifest))
    settings.ORCHESTRA_SHIPPED_POLICY = str(shipped)
    job = demo_policy_ensure(user=make_user(Role.ADMIN))
    assert job is not None and job.status == JobStatus.QUEUED and "shipped" not in job.config
    assert not Checkpoint.objects.exists()


def test_the_shipped_demo_policy_matches_the_shipped_outcomes() -> None:
    """The committed checkpoint was built from the committed outcomes, prices, embedding and
    config (`python -m orchestrator.ship_policy --check`); else rebuild it."""
    assert shipped_demo(Path(django_settings.OUTCOMES_DIR)) is not None, "python -m orchestrator.ship_policy"
    assert SHIPPED.stat().st_size < 20_000_000


def test_the_shipped_demo_policy_knows_the_local_model_from_its_outcomes() -> None:
    """Its columns hold the local endpoint's pairs as `bootstrap` lists them (the model string the
    learned policy matches on), measured from data/outcomes/smollm2.jsonl.gz: the policy does not
    give them the pool's mean, as it would a pair it never saw."""
    from orchestrator.policies.learned_loading import load_policy
    from studio.services.bootstrap import LocalModel, local_endpoint_ensure

    local = LocalModel(url="http://127.0.0.1:1/v1", name=django_settings.ORCHESTRA_LOCAL_MODEL_NAME,
                       price_per_mtok=0.25, context=2048)  # fmt: skip
    endpoint, _ = local_endpoint_ensure(pool_name="demo-like", local=local)
    context = load_policy(SHIPPED).context
    columns = {(info.model, info.primitive): j for j, info in enumerate(context.infos)}
    known = [p for p in ("direct", "cot", "self_consistency") if (endpoint.model, p) in columns]
    assert known == ["direct", "cot", "self_consistency"]
    accuracy = [float(context.calibration.global_acc[columns[endpoint.model, p]]) for p in known]
    assert max(accuracy) < float(context.calibration.global_acc.mean())  # measured: a 135M model, below the pool
