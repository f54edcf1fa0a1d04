"""/v1's fast path (studio/services/fast_path.py) against the full machinery, on a live
server, a real Celery worker and the scripted OpenAI-compatible upstream:

- the same request gives the same rows (run, node, attempt, events) both ways;
- the answer comes before the run is written, and a worker that starts only later still
  writes it (the record waits in the broker);
- the run is held in Redis before its call goes out, and a read of the run, its tree or its
  events right after the answer waits for it to be written (503 past the wait);
- where Redis cannot hold it, the full machinery takes the request;
- a run that goes on after its call (a repair on another pair) is handed over to the
  engine, and the request waits for it on the run's channel group;
- a run of the full machinery is waited for on its channel group, not by polling.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest
from openai import OpenAI

from providers.scripted_openai import Reply, ScriptedOpenAI
from studio import fast_intents
from studio.models import Attempt, ModelPool, Node, Primitive, Run, RunEvent, User
from studio.services import fast_path
from studio.services.pools import endpoint_create
from tests.factories import PoolFactory
from tests.support.runs import wait_for_run
from tests.support.worker import running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

QUESTION = "What is 6*7?"
VOLATILE = {"attempt", "latency_s", "cost_usd"}  # ids and clocks differ between two runs


def pool_of(server: ScriptedOpenAI, *models: tuple[str, float]) -> ModelPool:
    """A pool of the scripted upstream: one endpoint per (model, price), `direct` admissible."""
    pool = PoolFactory()
    Primitive.objects.get_or_create(name="direct")
    for model, price in models:
        endpoint_create(
            pool_id=pool.pk, name=model, model=f"openai/{model}", api_base=server.base_url, api_key="sk-test",
            input_cost_per_mtok=price, output_cost_per_mtok=price, primitives=["direct"],
        )  # fmt: skip
    return pool


def ask(base_url: str, token: str, pool: ModelPool, **extra: Any) -> Any:
    client = OpenAI(base_url=f"{base_url}/v1", api_key=token, max_retries=0, timeout=30)
    return client.chat.completions.with_raw_response.create(
        model="orchestra/default", messages=[{"role": "user", "content": QUESTION}],
        extra_body={"pool": pool.pk, **extra},
    )  # fmt: skip


def shape(run: Run) -> dict[str, Any]:
    """What a run decided and recorded, without ids, clocks and per-row prices."""

    def plain(payload: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in payload.items() if key not in VOLATILE | {"task"}}

    nodes = Node.objects.filter(run=run).order_by("pk")
    attempts = Attempt.objects.filter(node__run=run).order_by("pk")
    return {
        "run": (run.status, run.final_answer, run.end_reason, run.verification, run.tokens_in, run.tokens_out,
                run.policy, run.last_seq),
        "nodes": [(n.key, n.kind, n.status, n.answer, n.output, n.verification, n.metadata, n.primitive_id,
                   n.tokens_in, n.tokens_out) for n in nodes],
        "attempts": [(a.number, a.primitive_id, a.status, a.request, a.tokens_in, a.tokens_out, a.error_kind,
                      {k: v for k, v in a.envelope.items() if k not in VOLATILE}) for a in attempts],
        "events": [(e.seq, e.type, plain(e.payload)) for e in RunEvent.objects.filter(run=run).order_by("seq")],
    }  # fmt: skip


def spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """The run ids `fast_path.<name>` was called for."""
    called: list[int] = []
    real = getattr(fast_path, name)

    def counted(fast: Any) -> Any:
        called.append(fast.run.pk)
        return real(fast)

    monkeypatch.setattr(fast_path, name, counted)
    return called


def test_the_fast_path_records_what_the_full_machinery_records(
    asgi_server: str,
    celery_worker: object,
    user_token: tuple[User, str],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = spy(monkeypatch, "fast_record")
    with ScriptedOpenAI(lambda body: Reply(content="42", prompt_tokens=12, completion_tokens=3)) as server:
        pool = pool_of(server, ("cheap", 1.0), ("dear", 9.0))
        runs = {}
        for on in (True, False):
            settings.ORCHESTRA_FAST_PATH = on
            raw = ask(asgi_server, user_token[1], pool)
            assert raw.parse().choices[0].message.content == "42"
            runs[on] = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    assert recorded == [runs[True].pk]  # on, the fast path answered; off, it did not
    fast, full = shape(runs[True]), shape(runs[False])
    assert fast == full
    assert fast["run"][0] == "succeeded" and len(fast["attempts"]) == 1
    assert [e[1] for e in fast["events"]][:3] == ["run.created", "run.started", "node.created"]
    # The same pair was called, at the same price; the fast run's clocks are its own.
    assert {r.cost_usd for r in runs.values()} == {Decimal("0.00001500")}  # 15 tokens at $1 a million
    fast_run = runs[True]
    assert fast_run.started_at is not None and fast_run.finished_at is not None
    assert fast_run.created_at <= fast_run.started_at <= fast_run.finished_at
    events = RunEvent.objects.filter(run=runs[True]).order_by("seq")
    assert [e.created_at for e in events] == sorted(e.created_at for e in events)


def test_the_answer_comes_first_and_a_worker_started_later_writes_the_run(
    asgi_server: str, user_token: tuple[User, str]
) -> None:
    with ScriptedOpenAI(lambda body: Reply(content="42")) as server:
        pool = pool_of(server, ("only", 1.0))
        raw = ask(asgi_server, user_token[1], pool)  # no worker is running
        assert raw.parse().choices[0].message.content == "42"
        run_id = int(raw.headers["x-orchestra-run-id"])
        time.sleep(0.5)
        assert not Run.objects.filter(pk=run_id).exists()  # the record waits in the broker
        with running_worker(concurrency=2):
            run = wait_for_run(run_id, timeout=20)
    assert (run.status, run.final_answer, run.pool_id) == ("succeeded", "42", pool.pk)
    assert Attempt.objects.get(node__run=run).status == "ok"


def test_a_read_right_after_the_answer_waits_for_the_run_to_be_written(
    asgi_server: str, user_token: tuple[User, str], settings: Any
) -> None:
    held_at_call: list[int] = []

    def script(body: dict[str, Any]) -> Reply:
        held_at_call.extend(run_id for run_id, _ in fast_intents.due(float("inf"), limit=100_000))
        return Reply(content="42")

    with ScriptedOpenAI(script) as server:
        pool = pool_of(server, ("only", 1.0))
        raw = ask(asgi_server, user_token[1], pool)  # no worker is running: nothing writes the run yet
    assert raw.parse().choices[0].message.content == "42"
    run_id = int(raw.headers["x-orchestra-run-id"])
    assert run_id in held_at_call  # what the run would be was in Redis before its call went out

    def get(path: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {user_token[1]}"}
        return httpx.get(f"{asgi_server}{path}", headers=headers, timeout=60)

    settings.ORCHESTRA_FAST_READ_WAIT_S = 0.3
    early = get(f"/api/runs/{run_id}")
    assert early.status_code == 503 and early.headers["retry-after"] == "1"
    assert early.json()["detail"] == f"Run {run_id} was answered and is being recorded; try again in a moment."
    settings.ORCHESTRA_FAST_READ_WAIT_S = 30
    paths = [f"/api/runs/{run_id}", f"/api/runs/{run_id}/tree", f"/api/runs/{run_id}/events"]
    with ThreadPoolExecutor(len(paths)) as readers:
        reads = [readers.submit(get, path) for path in paths]
        time.sleep(0.5)
        assert not any(read.done() for read in reads)  # waiting, not 404
        with running_worker(concurrency=2):
            answers = [read.result(timeout=30) for read in reads]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert answers[0].json()["status"] == "succeeded" and answers[0].json()["final_answer"] == "42"
    assert [node["key"] for node in answers[1].json()["nodes"]] == ["root"]
    assert answers[2].json()["items"][-1]["type"] == "run.finished"
    assert not fast_intents.pending(run_id)


def test_where_redis_cannot_hold_the_run_the_full_machinery_takes_it(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Away:
        def pipeline(self, **_: Any) -> Any:
            raise ConnectionError("Redis is away")

    started = spy(monkeypatch, "fast_start")
    monkeypatch.setattr(fast_intents, "_redis", lambda: Away())
    with ScriptedOpenAI(lambda body: Reply(content="42")) as server:
        pool = pool_of(server, ("only", 1.0))
        raw = ask(asgi_server, user_token[1], pool)
    assert raw.parse().choices[0].message.content == "42"
    run = Run.objects.get(pk=int(raw.headers["x-orchestra-run-id"]))  # written before its answer
    assert started == [] and run.status == "succeeded"


def test_a_run_that_goes_on_after_its_call_is_handed_over_and_waited_for(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    handed_over = spy(monkeypatch, "fast_hand_over")

    def script(body: dict[str, Any]) -> Reply:
        if body["model"] == "broken":
            return Reply(status=401, content="bad key")
        return Reply(content="42")

    with ScriptedOpenAI(script) as server:
        pool = pool_of(server, ("broken", 1.0), ("sound", 9.0))
        raw = ask(asgi_server, user_token[1], pool)
        assert raw.parse().choices[0].message.content == "42"
        models = [request["model"] for request in server.requests]
    run = wait_for_run(int(raw.headers["x-orchestra-run-id"]))
    assert handed_over == [run.pk]
    attempts = list(Attempt.objects.filter(node__run=run).order_by("number").select_related("endpoint"))
    # The cheap pair's call failed on the fast path; the repair on the other ran on a worker.
    assert [(a.endpoint.name, a.status) for a in attempts] == [("broken", "error"), ("sound", "ok")]
    assert run.status == "succeeded" and run.final_answer == "42"
    assert models == ["broken", "sound"]
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types.count("attempt.queued") == 2 and types[-1] == "run.finished"


def test_a_run_of_the_full_machinery_is_waited_for_on_its_group_not_by_polling(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.selectors import chat as chat_selectors

    reads: list[float] = []
    read = chat_selectors.run_if_ended

    def counted(run_id: int) -> Run | None:
        reads.append(time.monotonic())
        return read(run_id)

    monkeypatch.setattr("studio.services.chat_wait.run_if_ended", counted)
    # No reading again in case a notification was lost: only the group's `run.finished` can end the wait in time.
    monkeypatch.setattr("studio.services.chat_wait.RECHECK_S", 30.0)
    with ScriptedOpenAI(lambda body: Reply(content="42", delay_s=1.0)) as server:
        pool = pool_of(server, ("slow", 1.0))
        started = time.monotonic()
        raw = ask(asgi_server, user_token[1], pool, best_of=1, deadline_s=60)  # a deadline: the full machinery
        took = time.monotonic() - started
    assert raw.parse().choices[0].message.content == "42"
    assert 1.0 <= took < 15, took
    # Read once on joining the group and once when it said the run finished: a 50 ms poll
    # would have read it about 20 times.
    assert len(reads) <= 3, reads


@pytest.mark.parametrize(
    ("upstream", "cause"),
    [("rejects the key", "the provider refused the key (401/403)"), ("is gone", "the endpoint could not be reached")],
)
def test_a_pool_whose_only_endpoint_fails_names_the_cause(
    asgi_server: str, celery_worker: object, user_token: tuple[User, str], upstream: str, cause: str
) -> None:
    """The 502 and the run's end reason say why (the provider's 401, a connection refused), not
    only that the policy chose nothing more."""
    from openai import APIStatusError

    with ScriptedOpenAI(lambda body: Reply(status=401, content="Incorrect API key provided")) as server:
        pool = pool_of(server, ("only", 1.0))
        if upstream == "is gone":
            server.httpd.shutdown()
            server.httpd.server_close()  # nothing listens there any more
        with pytest.raises(APIStatusError) as failed:
            ask(asgi_server, user_token[1], pool)
    assert failed.value.status_code == 502
    error = failed.value.body
    assert isinstance(error, dict)
    # (a connection refused is transient: the default policy tries the pair once more first)
    assert (
        f"failed: no progress: {cause}; the policy chose nothing more after that failure (root, attempt "
        in (error["message"])
    )
    run = wait_for_run(int(failed.value.response.headers["x-orchestra-run-id"]))
    assert run.status == "failed" and run.end_reason.startswith(f"no progress: {cause};")
