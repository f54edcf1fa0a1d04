"""A collection over the synthetic pool: benchmark tasks × its models through the real provider
path, each recorded score the outcome the pool drew, each cost the endpoint's prices."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.benchmark_tasks import all_tasks
from studio.models import Admissibility, Primitive, RecordedOutcome, Task
from studio.services.collections import collection_create
from studio.services.pools import endpoint_create
from studio.services.tasks import tasks_from_benchmark
from tests.factories import PoolFactory, UserFactory
from workers.collection import run_collection
from workers.synthetic_answers import draw
from workers.synthetic_config import DEFAULT_CONFIG
from workers.synthetic_pool import SyntheticPool

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def served() -> Iterator[SyntheticPool]:
    with SyntheticPool() as pool:
        yield pool


def test_a_collection_records_what_the_pool_drew(served: SyntheticPool) -> None:
    owner = UserFactory()
    made = [tasks_from_benchmark(owner=owner, benchmark=b, n=6, seed=0) for b in ("gsm8k", "hotpotqa", "bfcl")]
    pool = PoolFactory()
    pairs = []
    for model in DEFAULT_CONFIG.models[:2]:
        endpoint = endpoint_create(
            pool_id=pool.pk, name=model.name, model=f"openai/{model.name}", api_base=served.base_url, api_key="k",
            input_cost_per_mtok=model.input_cost_per_mtok, output_cost_per_mtok=model.output_cost_per_mtok,
        )  # fmt: skip
        for primitive in ("cot", "tool_use"):
            Admissibility.objects.create(
                endpoint=endpoint, primitive=Primitive.objects.get_or_create(name=primitive)[0]
            )
            pairs.append((endpoint.pk, primitive))
    task_ids = [pk for m in made for pk in m.task_ids]
    collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=task_ids, pairs=pairs, budget_usd=10,
                                   enqueue=False)  # fmt: skip

    assert run_collection(collection.pk) == "succeeded"

    rows = list(RecordedOutcome.objects.filter(source=collection.source))
    assert len(rows) == 18 * 4
    by_item = {task.metadata["item_id"]: task for task in Task.objects.filter(pk__in=task_ids)}
    models = {model.name: model for model in DEFAULT_CONFIG.models}
    specs = {spec.item_id: spec for b in ("gsm8k", "hotpotqa", "bfcl") for spec in all_tasks(b)}
    for row in rows:
        model = models[row.model.removeprefix("openai/")]
        spec = specs[row.item_id]
        right = draw(0, model.name, spec) < model.accuracy_on(spec.domain)
        assert row.score == (1.0 if right else 0.0), (row.model, row.primitive, row.item_id, row.response)
        assert row.domain == by_item[row.item_id].domain and (row.cost_usd or 0) > 0
