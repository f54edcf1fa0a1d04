"""RabbitMQ as the Celery broker: a real worker takes tasks and whole runs through it, while
Celery's results, the channel layer and the cache stay in Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from studio.health import check_worker
from studio.models import Attempt, Node, RunEvent
from studio.services.runs import run_create
from studio.services.tasks import task_create_composite
from tests.factories import UserFactory
from tests.integration.test_composite import recorded
from tests.support.rabbitmq import celery_on, rabbitmq_url
from tests.support.runs import wait_for_run
from tests.support.worker import running_worker
from workers.celery import app
from workers.tasks import ping

pytestmark = pytest.mark.integration


@pytest.fixture
def rabbitmq_worker(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real Celery worker (threads) whose broker is RabbitMQ, as is this process's sender.
    It waits for the database to be quiet before it goes only in tests that use it."""
    database = request.node.get_closest_marker("django_db") is not None
    with celery_on(rabbitmq_url()), running_worker(concurrency=8, database=database) as worker:
        yield worker


def test_the_broker_is_rabbitmq_and_results_stay_in_redis(rabbitmq_worker: object) -> None:
    consumer = rabbitmq_worker.consumer  # type: ignore[attr-defined]
    assert consumer.connection.transport.driver_type == "amqp"
    assert app.conf.broker_transport_options == {"confirm_publish": True}
    nonce = uuid.uuid4().hex
    result = ping.delay(nonce)
    answer = result.get(timeout=20)  # read back from the result backend: Redis
    assert answer["nonce"] == nonce and answer["queue"] == "workers"
    assert type(result.backend).__name__ == "RedisBackend"
    report = check_worker(timeout=5)  # the broadcast ping crosses RabbitMQ too
    assert report["ok"], report


@pytest.mark.django_db(transaction=True)
def test_a_composite_run_completes_through_rabbitmq(rabbitmq_worker: object) -> None:
    from studio.services.outcomes import replay_pool_ensure

    recorded("r.1", "small", "Answer: 1", 1.0, "0.001")
    recorded("r.2", "small", "Answer: 2", 1.0, "0.001")
    recorded("r.3", "large", "Answer: 3", 1.0, "0.010")
    prices = {
        "small": {"input_per_mtok": 0.1, "output_per_mtok": 0.1},
        "large": {"input_per_mtok": 5.0, "output_per_mtok": 5.0},
    }
    pool = replay_pool_ensure(
        pool_name="replay-rabbitmq", pairs={("small", "direct"), ("large", "direct")}, prices=prices
    )
    owner = UserFactory()
    task = task_create_composite(owner=owner, items=[("demo", "r.1"), ("demo", "r.2"), ("demo", "r.3")])

    run = wait_for_run(run_create(owner=owner, task_id=task.pk, pool_id=pool.pk).pk)

    assert run.status == "succeeded", run.end_reason
    items = Node.objects.filter(run=run, key__startswith="root.item")
    assert items.count() == 3 and all(node.status == "succeeded" for node in items)
    # Every attempt ran once and is billed once; the run's events have no gap.
    attempts = Attempt.objects.filter(node__run=run)
    assert attempts.count() == 3 and {a.status for a in attempts} == {"ok"}
    assert sum(a.cost_usd for a in attempts) == run.cost_usd
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, run.last_seq + 1))
