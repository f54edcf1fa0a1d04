"""The world each access case runs in (issue 8, part 4): a caller of the case's role (a viewer
nobody is logged in as, for anonymous calls), a stranger, and one of each object a route
names, the caller's own, the stranger's and a stranger's run in a preference pair, with the
ids each route's path and body take; and how a call is sent, and checked to have been
refused without changing a row."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.test import Client

from studio.models import (
    Checkpoint,
    EvaluationRun,
    Node,
    PreferenceLabel,
    PreferencePair,
    RecordedOutcome,
    Role,
    Run,
    RunEvent,
    Task,
    TrainingJob,
    User,
)
from studio.services.tokens import token_create
from tests.factories import (
    AdmissibilityFactory,
    EndpointFactory,
    PoolFactory,
    PrimitiveFactory,
    RunFactory,
    TaskFactory,
    UserFactory,
)
from tests.hardening.access_rules import OTHER, OWN, PAIRED, Jsonl


@dataclass
class World:
    actor: User  # the caller (a viewer nobody is logged in as, for anonymous calls)
    client: Client
    ids: dict[str, dict[str, Any]]  # owner -> the ids a route's path and body take
    spares: dict[str, int]  # unused pool, endpoint, primitive and admissibility, to delete

    def ids_for(self, owner: str, method: str) -> dict[str, Any]:
        ids = dict(self.ids[owner])
        if method == "DELETE":
            ids.update(self.spares)
        return ids


def _run_of(owner: User, pool_id: int, endpoint_id: int, primitive_id: int, task: Task | None = None) -> Run:
    """A running run with a root node that may be re-run, and one event."""
    run = RunFactory(task=task or TaskFactory(owner=owner), pool_id=pool_id, status="running")
    Node.objects.create(
        run=run, key="root", kind="root", text=run.task.text, status="succeeded",
        endpoint_id=endpoint_id, primitive_id=primitive_id, answer="2",
    )  # fmt: skip
    RunEvent.objects.create(run=run, seq=1, type="run.started", payload={})
    run.last_seq = 1
    run.save(update_fields=["last_seq"])
    return run


def _collection(owner: User, pool_id: int) -> int:
    """A stopped collection (the budget ran out): it may be read, cancelled and resumed."""
    from decimal import Decimal

    from studio.models import Collection

    collection = Collection.objects.create(owner=owner, pool_id=pool_id, name="hardening", status="stopped",
                                           source=f"collection-h{owner.pk}", budget_usd=Decimal(1))  # fmt: skip
    return int(collection.pk)


def build_world(role: Role | None, data_dir: Path) -> World:
    actor = UserFactory(role=role or Role.VIEWER)
    stranger = UserFactory(role=Role.VIEWER)
    direct = PrimitiveFactory(name="direct")
    admissibility = AdmissibilityFactory(primitive=direct)
    endpoint = admissibility.endpoint
    pool = endpoint.pool
    spare_endpoint = EndpointFactory(pool=pool)
    spares = {
        "pool_id": PoolFactory().pk,
        "endpoint_id": spare_endpoint.pk,
        "primitive_id": PrimitiveFactory(name="spare").pk,
        "admissibility_id": AdmissibilityFactory(endpoint=spare_endpoint, primitive=direct).pk,
    }
    free_primitive = PrimitiveFactory(name="free")

    def run_of(user: User, task: Task | None = None) -> Run:
        return _run_of(user, pool.pk, endpoint.pk, direct.pk, task)

    own_run, other_run, paired_run = run_of(actor), run_of(stranger), run_of(stranger)
    partner = RunFactory(task=paired_run.task, status="succeeded")
    pair = PreferencePair.objects.create(task=paired_run.task, run_a=paired_run, run_b=partner)
    judged_task = TaskFactory(owner=stranger)
    judged_a, judged_b = (RunFactory(task=judged_task, status="succeeded") for _ in range(2))
    judged = PreferencePair.objects.create(task=judged_task, run_a=judged_a, run_b=judged_b)
    PreferenceLabel.objects.create(pair=judged, labeler=actor, verdict="a")
    spares["pair_id"] = judged.pk  # DELETE .../labels takes back the caller's verdict
    ended_task = TaskFactory(owner=stranger)
    ended_a, ended_b = (RunFactory(task=ended_task, status="succeeded") for _ in range(2))

    (data_dir / "checkpoint.pt").write_bytes(b"weights")
    checkpoint = Checkpoint.objects.create(kind="policy", name=f"ck-{actor.pk}", path="checkpoint.pt")
    RecordedOutcome.objects.get_or_create(
        source="hardening", item_id="item-1", model="m", primitive="direct",
        defaults={"split": "test", "benchmark": "arith", "domain": "math", "prompt": "What is 1+1?",
                  "prompt_sha256": "0" * 64, "gold": "2", "score": 1.0},
    )  # fmt: skip
    shared = {
        "username": actor.username,
        "pool_id": pool.pk,
        "endpoint_id": endpoint.pk,
        "primitive_id": direct.pk,
        "free_primitive_id": free_primitive.pk,
        "admissibility_id": admissibility.pk,
        "node_key": "root",
        "job_id": TrainingJob.objects.create(kind="policy").pk,
        "checkpoint_id": checkpoint.pk,
        "evaluation_id": EvaluationRun.objects.create().pk,
        "collection_id": _collection(actor, pool.pk),
        "scorable_task_id": TaskFactory(gold_answer="2", checker="gsm8k", domain="math").pk,  # nobody's of note
        "pair_id": pair.pk,
        "ended_run_a": ended_a.pk,
        "ended_run_b": ended_b.pk,
    }

    def owned(run: Run, token_owner: User) -> dict[str, Any]:
        token = token_create(user=token_owner, name="t")[0]
        return {**shared, "task_id": run.task_id, "run_id": run.pk, "token_id": token.pk}

    ids = {OWN: owned(own_run, actor), OTHER: owned(other_run, stranger), PAIRED: owned(paired_run, stranger)}
    client = Client()
    if role is not None:
        client.force_login(actor)
    return World(actor=actor, client=client, ids=ids, spares=spares)


def send(client: Client, method: str, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if isinstance(body, Jsonl):
        kwargs.update(data=body.text.encode(), content_type="application/x-ndjson")
    elif method in {"POST", "PATCH", "PUT"}:
        kwargs.update(data=json.dumps(body if body is not None else {}), content_type="application/json")
    return getattr(client, method.lower())(path, **kwargs)


def fingerprint() -> dict[str, list[dict[str, Any]]]:
    """Every row of the studio's tables: a refused call must leave them all as they were."""
    return {
        model.__name__: list(model._default_manager.order_by("pk").values())
        for model in apps.get_app_config("studio").get_models()
    }


def assert_refused_cleanly(response: Any, before: dict[str, Any], context: Any) -> None:
    assert set(response.json()) == {"detail"}, (context, response.content)
    assert fingerprint() == before, (context, "a refused call changed rows")
