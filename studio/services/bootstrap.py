"""First-run setup for `manage.py up`: an admin user and the demo pool. Idempotent."""

from __future__ import annotations

import logging
import pickle
import secrets
import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from orchestrator.embedding import EMBEDDING_ID
from orchestrator.ship_policy import OUTCOMES, shipped_demo
from studio.models import (
    Checkpoint,
    CheckpointKind,
    JobStatus,
    ModelEndpoint,
    ModelPool,
    Primitive,
    Role,
    TrainingJob,
    User,
)
from studio.services.pools import endpoint_create
from studio.services.training import checkpoints_dir, training_job_create, training_job_finish
from studio.services.users import user_create

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrimitiveSpec:
    name: str
    description: str
    parameters: dict[str, int]
    needs_tools: bool = False


PRIMITIVES = [
    PrimitiveSpec("direct", "One call; the response is the answer.", {}),
    PrimitiveSpec("cot", "Think step by step, then extract the final answer.", {}),
    PrimitiveSpec("self_consistency", "Sample k chain-of-thought answers and vote.", {"k": 5}),
    PrimitiveSpec("program", "Write Python; the sandbox runs it; the printed result is the answer.", {}),
    PrimitiveSpec(
        "tool_use",
        "A ReAct loop with a calculator, a Python sandbox and function calls.",
        {"max_steps": 6},
        True,
    ),
    PrimitiveSpec("verify", "A critic judges a given answer and returns a verdict.", {}),
    PrimitiveSpec("reflexion", "Generate, run the tests, reflect and retry.", {"max_tries": 3}, True),
    PrimitiveSpec("long_context", "Chunk the input, map over the chunks, reduce.", {"chunk_tokens": 2000}),
    PrimitiveSpec("aggregate", "Compose the answers of a decomposed task's parts into its answer.", {}),
    PrimitiveSpec("plan", "Split a task into a DAG of subtasks (JSON), with one repair prompt.", {}),
]
# The local model's admissible pairs in the demo pool: every primitive that needs neither tools
# it cannot call (tool_use), nor a sandboxed program it cannot write (program), nor long inputs
# past its context (long_context).
LOCAL_KEY = "no-key"
LOCAL_PRIMITIVES = ("direct", "cot", "self_consistency", "reflexion", "verify", "plan", "aggregate")

DEMO_POOL = "replay-demo"
# The demo policy trains on RouterBench's recorded outcomes and the local model's real ones: a
# few minutes on 2 cores, while the studio already serves runs. On a fresh install the one
# shipped with the repository (orchestrator.ship_policy) is installed instead, where it was
# built from these outcomes.
DEMO_POLICY_CONFIG = {"seed": 0, "outcomes": list(OUTCOMES), "demo": True}


@transaction.atomic
def admin_ensure(*, username: str, password: str | None) -> tuple[User, str | None]:
    """Return the first admin, creating `username` if there is none.

    The second value is a generated password, set only when one was made up here.
    """
    existing = User.objects.filter(role=Role.ADMIN).order_by("id").first()
    if existing is not None:
        return existing, None
    generated = None if password else secrets.token_urlsafe(12)
    user = user_create(username=username, password=password or generated, role=Role.ADMIN)
    return user, generated


@transaction.atomic
def primitives_seed() -> list[Primitive]:
    rows = []
    for spec in PRIMITIVES:
        row, _ = Primitive.objects.get_or_create(
            name=spec.name,
            defaults={
                "description": spec.description,
                "parameters": spec.parameters,
                "needs_tools": spec.needs_tools,
            },
        )
        rows.append(row)
    return rows


@dataclass(frozen=True)
class LocalModel:
    """The local model as the demo pool lists it (settings ORCHESTRA_LOCAL_MODEL_*)."""

    url: str  # its OpenAI-compatible base URL
    name: str  # the model the server serves
    price_per_mtok: float  # USD per million tokens, in and out
    context: int

    @property
    def endpoint_name(self) -> str:
        return f"{self.name}-local"


@transaction.atomic
def local_endpoint_ensure(*, pool_name: str, local: LocalModel) -> tuple[ModelEndpoint, bool]:
    """The local model's endpoint in the pool (made with the pool if missing), with an admissible
    pair for each of LOCAL_PRIMITIVES; on a later start its URL, model, price and context are
    brought up to date (`up` may take another port), its pairs and `enabled` left as they are.
    Returns it and whether it was made."""
    pool, _ = ModelPool.objects.get_or_create(
        name=pool_name, defaults={"description": "The demo pool: recorded outcomes (replay) and the local model."}
    )
    fields = {
        "model": f"openai/{local.name}",
        "api_base": local.url,
        "input_cost_per_mtok": Decimal(str(local.price_per_mtok)),
        "output_cost_per_mtok": Decimal(str(local.price_per_mtok)),
        "context_window": local.context,
        "descriptors": {"local": True, "family": "llama.cpp", "tags": ["local"]},
    }
    endpoint = ModelEndpoint.objects.filter(pool=pool, name=local.endpoint_name).first()
    if endpoint is None:
        primitives_seed()
        # llama.cpp's server checks no key, but OpenAI's client insists on one.
        made = endpoint_create(
            pool_id=pool.pk, name=local.endpoint_name, api_key=LOCAL_KEY, primitives=LOCAL_PRIMITIVES, **fields
        )
        return made, True
    changed = {key: value for key, value in fields.items() if getattr(endpoint, key) != value}
    if changed:
        for key, value in changed.items():
            setattr(endpoint, key, value)
        endpoint.save(update_fields=[*changed, "updated_at"])
    return endpoint, False


def checkpoint_facts(checkpoint: Checkpoint) -> tuple[str, bool] | None:
    """(the text embedding a checkpoint was trained on, whether it carries its pool's
    calibration): its config's, else its file's (rows made before the config said); None when
    the file is gone or unreadable."""
    embedding, calibration = checkpoint.config.get("embedding"), checkpoint.config.get("calibration")
    if isinstance(embedding, str) and isinstance(calibration, bool):
        return embedding, calibration
    from orchestrator.learning.model import checkpoint_file_facts  # torch: only for such old rows

    try:
        return checkpoint_file_facts(Path(settings.DATA_DIR) / checkpoint.path)
    except (OSError, RuntimeError, ValueError, pickle.UnpicklingError) as exc:
        logger.warning("checkpoint %s: cannot read %s (%s)", checkpoint.name, checkpoint.path, exc)
        return None


def stale_demo_policy() -> Checkpoint | None:
    """The default policy checkpoint, where it is a demo one trained on other text embeddings
    than today's (so its task features mean something else now) or before checkpoints carried
    their pool's calibration (so the live policy cannot compute its features as the evaluation
    does); else None. A checkpoint someone trained or promoted by hand is theirs to replace."""
    default = Checkpoint.objects.filter(kind=CheckpointKind.POLICY, is_default=True).first()
    if default is None or not TrainingJob.objects.filter(checkpoint=default, config__demo=True).exists():
        return None
    facts = checkpoint_facts(default)
    return default if facts is not None and facts != (EMBEDDING_ID, True) else None


@transaction.atomic
def demo_policy_ensure(*, user: User) -> TrainingJob | None:
    """Queue the demo policy's training unless a policy checkpoint exists or a job for it is
    queued. A demo job left running by a studio that stopped is marked failed first (up
    starts the studio's workers after this, so nothing else is running it). A default demo
    checkpoint trained on older text embeddings is trained again; the new one replaces it as
    the default when it is done (`replaces`), unless another was promoted meanwhile."""
    interrupted = TrainingJob.objects.filter(kind=CheckpointKind.POLICY, status=JobStatus.RUNNING, config__demo=True)
    interrupted.update(
        status=JobStatus.FAILED, finished_at=timezone.now(), message="interrupted: the studio stopped while it ran"
    )
    if TrainingJob.objects.filter(kind=CheckpointKind.POLICY, status=JobStatus.QUEUED).exists():
        return None
    stale = stale_demo_policy()
    if stale is not None:
        config = {**DEMO_POLICY_CONFIG, "replaces": stale.pk}
        return training_job_create(user=user, kind=CheckpointKind.POLICY, config=config)
    if Checkpoint.objects.filter(kind=CheckpointKind.POLICY).exists():
        return None
    return demo_policy_install(user=user) or training_job_create(
        user=user, kind=CheckpointKind.POLICY, config=dict(DEMO_POLICY_CONFIG)
    )


def demo_policy_install(*, user: User) -> TrainingJob | None:
    """The shipped demo checkpoint (`orchestrator.ship_policy`) as the default policy, recorded
    as a finished demo job, where it was built from exactly this install's outcomes, prices,
    embedding and config; else None (the demo policy is then trained)."""
    shipped: str = settings.ORCHESTRA_SHIPPED_POLICY or ""
    manifest = shipped_demo(Path(settings.OUTCOMES_DIR), Path(shipped)) if shipped else None
    if manifest is None:
        if shipped:
            logger.info("the shipped demo policy %s is missing or stale: training one", shipped)
        return None
    target = checkpoints_dir() / f"demo-policy-{manifest['sha256'][:12]}.pt"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    shutil.copyfile(shipped, partial)
    partial.replace(target)
    job = TrainingJob.objects.create(
        kind=CheckpointKind.POLICY, config={**DEMO_POLICY_CONFIG, "shipped": True}, created_by=user,
        status=JobStatus.RUNNING, started_at=timezone.now(), message="installing the shipped demo policy",
    )  # fmt: skip
    training_job_finish(
        job_id=job.pk, path=target, config=manifest["config"], metrics=manifest["metrics"], lineage=manifest["lineage"]
    )
    job.refresh_from_db()
    return job
