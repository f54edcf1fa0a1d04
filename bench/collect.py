"""Collections: cells per second through the real provider path, and what `kill -9` of the
collecting worker costs.

    .venv/bin/python bench/collect.py [--cells 400] [--endpoints 1] [--concurrency 1,2,4,8,16] [--latency 0,0.5]
    .venv/bin/python bench/collect.py --crash [--cells 400] [--kill-at 0.3]
    .venv/bin/python bench/collect.py --replay 200

Replay round trip (`--replay N`): N recorded RouterBench items (seeded) × every pair of the
replay pool (`bench-replay`), collected through the provider path; every collected row is
compared with its recording, field by field (response, score, tokens, cost, prompt,
benchmark, domain). Goal: 0 mismatches, 0 missing rows.

Throughput. Tasks of arithmetic questions (gsm8k checker) × `--endpoints` endpoints of the
scripted OpenAI-compatible server (providers/scripted_openai.py, on 127.0.0.1, in a
process of its own as an upstream is),
collected by `workers.collection.run_collection` in this process: each cell a litellm call
over HTTP, its answer checked, its outcome row and the collection's spend written in one
transaction. At every concurrency (calls in flight per endpoint) and upstream latency,
printed: cells per second, and against the goals: with a 0-latency upstream at least 100
cells/s (2 cores) at the best concurrency; with a 0.5 s upstream close to (endpoints ×
concurrency) / 0.5 s, at least 80% of it. Each run is its own collection of at least
`--cells` cells, and of at least 12 rounds of calls (a round: every call slot once).

Crash (`--crash`). A real Celery worker (queues orchestrator and training, the recovery sweep
every 2 s, a collection quiet for 5 s queued again) runs a collection of `--cells` cells at
4 calls in flight per endpoint, 0.1 s upstream latency, with a budget that stops it after
about 3/4 of them. Once `--kill-at` of the cells are recorded, the worker's whole process
group gets SIGKILL, and a new worker starts. Checked: 0 provider calls after the kill for cells recorded before
it; 0 lost cells (every cell recorded, or left pending by the budget); the spend the
provider billed (every call, the ones cut short included) over the budget by at most one
call per endpoint.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_environment, bench_user, code_version, load_average, verdict  # noqa: E402
from providers.scripted_openai import Reply, ScriptedOpenAI, last_user  # noqa: E402

ENDPOINTS = 4
PRICE = 1000.0  # $/Mtok in and out: a 10 + 5 token reply costs $0.015


class Upstream:
    """Answers 'What is a + b?' (right on even-numbered endpoints), after `latency_s`; logs
    each call's (model, prompt, time)."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls: list[tuple[str, str, float]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        model, prompt = body["model"], last_user(body)
        with self.lock:
            self.calls.append((model, prompt, time.time()))
        a, b = (int(x) for x in re.findall(r"\d+", prompt)[:2])
        right = int(model.rsplit("-", 1)[-1]) % 2 == 0
        return Reply(content=f"#### {a + b if right else a + b + 1}", prompt_tokens=10, completion_tokens=5,
                     delay_s=self.latency_s)  # fmt: skip


def make_pool(base_url: str, name: str, endpoints: int = ENDPOINTS) -> tuple[Any, list[tuple[int, str]]]:
    from studio.models import Admissibility, ModelPool, Primitive
    from studio.services.pools import endpoint_create

    pool = ModelPool.objects.create(name=name)
    direct = Primitive.objects.get_or_create(name="direct")[0]
    pairs = []
    for k in range(endpoints):
        endpoint = endpoint_create(
            pool_id=pool.pk, name=f"m-{k}", model=f"openai/m-{k}", api_base=base_url, api_key="sk-bench",
            input_cost_per_mtok=PRICE, output_cost_per_mtok=PRICE,
        )  # fmt: skip
        Admissibility.objects.create(endpoint=endpoint, primitive=direct)
        pairs.append((endpoint.pk, "direct"))
    return pool, pairs


def make_tasks(owner: Any, count: int, tag: str) -> list[int]:
    from studio.services.tasks import task_create

    return [
        task_create(owner=owner, text=f"[{tag}] What is {k} + {k + 7}?", gold_answer=str(2 * k + 7), checker="gsm8k",
                    benchmark="gsm8k", domain="math").pk
        for k in range(count)
    ]  # fmt: skip


class Served:
    """The scripted server in a process of its own (as an upstream is: its CPU is not this
    process's, nor its GIL); `base_url` once it listens."""

    def __init__(self, latency_s: float) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", str(latency_s)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def serve(latency_s: float) -> None:
    with ScriptedOpenAI(Upstream(latency_s)) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


def throughput(args: argparse.Namespace) -> bool:
    from studio.services.collections import collection_create
    from workers.collection import run_collection

    owner = bench_user()
    stamp = int(time.time())
    ok = True
    n = args.endpoints
    print(f"{n} endpoint(s); each run its own collection of at least {args.cells} cells, and of 12 rounds of calls")
    print(f"{'latency':>8} {'concurrency':>11} {'cells':>6} {'cells/s':>8} {'ideal':>8}  goal")
    for latency in args.latency:
        best = 0.0
        with Served(latency) as server:
            pool, pairs = make_pool(server.base_url, f"bench-collect-{stamp}-{latency}", endpoints=n)
            for concurrency in args.concurrency:
                cells = max(args.cells, 12 * n * concurrency)
                tasks = make_tasks(owner, -(-cells // n), f"{stamp}-{latency}-{concurrency}")
                collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks, pairs=pairs,
                                               budget_usd=1e6, max_concurrency=concurrency, enqueue=False)  # fmt: skip
                start = time.perf_counter()
                status = run_collection(collection.pk)
                rate = len(tasks) * n / (time.perf_counter() - start)
                best = max(best, rate)
                goal = ""
                ideal = n * concurrency / latency if latency else float("nan")
                if latency:
                    met = rate >= 0.8 * ideal
                    ok &= met
                    goal = f">= 80% of ideal: {verdict(met)}"
                ok &= status == "succeeded"
                print(f"{latency:>7g}s {concurrency:>11} {len(tasks) * n:>6} {rate:>8.1f} {ideal:>8.1f}  {goal}  "
                      f"({status}; {load_average()})", flush=True)  # fmt: skip
        if not latency:
            ok &= best >= 100
            print(f"  0-latency upstream: best {best:.1f} cells/s; goal >= 100 on 2 cores: {verdict(best >= 100)}")
    return ok


def crash(args: argparse.Namespace, bench: Any) -> bool:
    from studio.models import CellStatus, CollectionCell, RecordedOutcome
    from studio.services.collections import collection_create

    upstream = Upstream(0.1)
    env = {"ORCHESTRA_RECOVERY_INTERVAL_S": "2", "ORCHESTRA_COLLECTION_QUIET_S": "5"}
    with ScriptedOpenAI(upstream) as server:
        owner = bench_user()
        pool, pairs = make_pool(server.base_url, f"bench-crash-{int(time.time())}")
        tasks = make_tasks(owner, args.cells // ENDPOINTS, f"crash-{int(time.time())}")
        cell_cost = 0.015
        budget = round(0.75 * len(tasks) * ENDPOINTS * cell_cost, 6)
        worker = bench.start_worker("collect-a", pool="prefork", concurrency=1, queues="orchestrator,training",
                                    env=env)  # fmt: skip
        time.sleep(3)  # the worker is up
        collection = collection_create(owner=owner, pool_id=pool.pk, task_ids=tasks, pairs=pairs,
                                       budget_usd=budget, max_concurrency=4)  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline and (
            CollectionCell.objects.filter(collection=collection, status=CellStatus.RECORDED).count()
            < args.kill_at * len(tasks) * ENDPOINTS
        ):
            time.sleep(0.05)
        worker.kill()
        killed_at = time.time()
        recorded_before = set(
            CollectionCell.objects.filter(collection=collection, status=CellStatus.RECORDED).values_list(
                "task__text", "endpoint__model"
            )
        )
        in_flight = CollectionCell.objects.filter(collection=collection, status=CellStatus.STARTED).count()
        print(f"killed the worker: {len(recorded_before)} cells recorded, {in_flight} in flight", flush=True)
        time.sleep(1)
        bench.start_worker("collect-b", pool="prefork", concurrency=1, queues="orchestrator,training", env=env)
        deadline = time.time() + 180
        while time.time() < deadline:
            collection.refresh_from_db()
            if collection.status not in ("queued", "running"):
                break
            time.sleep(0.5)
        collection.refresh_from_db()
    repeated = [
        (model, prompt)
        for model, prompt, at in upstream.calls
        if at > killed_at and (prompt, f"openai/{model}") in recorded_before
    ]
    calls = Counter((model, prompt) for model, prompt, _ in upstream.calls)
    statuses = Counter(CollectionCell.objects.filter(collection=collection).values_list("status", flat=True))
    outcomes = RecordedOutcome.objects.filter(source=collection.source).count()
    lost = statuses.get(CellStatus.STARTED, 0) + (statuses.get(CellStatus.RECORDED, 0) - outcomes)
    billed = len(upstream.calls) * cell_cost
    over = billed - budget
    print(f"collection {collection.pk}: {collection.status}; cells {dict(statuses)}; {outcomes} outcome rows")
    print(f"provider calls: {len(upstream.calls)} for {len(calls)} cells ({sum(n > 1 for n in calls.values())} "
          f"called twice: in flight at the kill)")  # fmt: skip
    print(f"calls after the kill for cells recorded before it: {len(repeated)} (goal 0): {verdict(not repeated)}")
    print(f"lost cells (started or recorded without an outcome row): {lost} (goal 0): {verdict(lost == 0)}")
    limit = ENDPOINTS * cell_cost
    print(f"billed ${billed:.3f} against a budget of ${budget:.3f}: over by ${max(over, 0):.3f}, at most one call "
          f"per endpoint (${limit:.3f}): {verdict(over <= limit + 1e-9)}; the collection booked "
          f"${float(collection.spent_usd):.3f}")  # fmt: skip
    return not repeated and lost == 0 and over <= limit + 1e-9 and collection.status in ("stopped", "succeeded")


def replay_round_trip(args: argparse.Namespace) -> bool:
    """`--replay N`: N recorded RouterBench items (seeded) × every pair of the replay pool,
    collected through the provider path; each row compared with its recording."""
    import random

    from bench.harness import REPLAY_SOURCE, replay_pool
    from studio.models import Admissibility, RecordedOutcome
    from studio.services.collections import collection_create
    from studio.services.tasks import task_create
    from workers.collection import run_collection

    pool_id = replay_pool()
    owner = bench_user()
    items = sorted(set(RecordedOutcome.objects.filter(source=REPLAY_SOURCE).values_list("item_id", flat=True)))
    chosen = sorted(random.Random(0).sample(items, min(args.replay, len(items))))  # noqa: S311 (a sample)
    first = {
        r.item_id: r for r in RecordedOutcome.objects.filter(source=REPLAY_SOURCE, item_id__in=chosen).order_by("pk")
    }
    tasks = [
        task_create(owner=owner, text=first[i].prompt, benchmark=first[i].benchmark, domain=first[i].domain,
                    metadata={"item_id": i}).pk
        for i in chosen
    ]  # fmt: skip
    admissible = Admissibility.objects.filter(endpoint__pool_id=pool_id, allowed=True).select_related("primitive")
    pairs = [(a.endpoint_id, a.primitive.name) for a in admissible]
    collection = collection_create(owner=owner, pool_id=pool_id, task_ids=tasks, pairs=pairs, budget_usd=1e6,
                                   max_concurrency=8, enqueue=False, name="replay round trip")  # fmt: skip
    start = time.perf_counter()
    status = run_collection(collection.pk)
    took = time.perf_counter() - start
    fields = ("response", "score", "prompt_tokens", "completion_tokens", "cost_usd", "prompt", "benchmark", "domain")
    recorded = {
        (r["item_id"], r["model"], r["primitive"]): r
        for r in RecordedOutcome.objects.filter(source=REPLAY_SOURCE, item_id__in=chosen).values(
            "item_id", "model", "primitive", *fields
        )
    }
    got = {
        (r["item_id"], r["model"], r["primitive"]): r
        for r in RecordedOutcome.objects.filter(source=collection.source).values(
            "item_id", "model", "primitive", *fields
        )
    }
    mismatched = Counter(
        name for key, row in recorded.items() for name in fields if key not in got or got[key][name] != row[name]
    )
    missing = len(set(recorded) - set(got))
    for key, row in recorded.items():  # the first mismatch, shown
        wrong = [name for name in fields if key in got and got[key][name] != row[name]]
        if wrong:
            print(f"  e.g. {key}: " + "; ".join(f"{n} {got[key][n]!r} != recorded {row[n]!r}" for n in wrong))
            break
    print(f"replay round trip: {len(chosen)} RouterBench items x {len(pairs)} pairs = {len(recorded)} recordings; "
          f"collection {collection.pk} {status} in {took:.1f} s")  # fmt: skip
    print(f"  rows collected: {len(got)}; missing: {missing}; fields compared: {', '.join(fields)}")
    print(f"  mismatches by field: {dict(mismatched) or 'none'} (goal 0): {verdict(not mismatched and not missing)}")
    return not mismatched and not missing and status == "succeeded"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=400)
    parser.add_argument("--endpoints", type=int, default=1, help="endpoints of the pool (throughput)")
    parser.add_argument("--concurrency", default="1,2,4,8,16")
    parser.add_argument("--latency", default="0,0.5")
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--replay", type=int, help="the replay round trip on N recorded RouterBench items")
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)  # the upstream's own process
    parser.add_argument("--kill-at", type=float, default=0.3, help="the share of cells recorded when it is killed")
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
    args.concurrency = [int(x) for x in args.concurrency.split(",")]
    args.latency = [float(x) for x in args.latency.split(",")]
    if args.cells < ENDPOINTS:
        parser.error(f"--cells is at least {ENDPOINTS}")
    print(f"bench/collect.py, code {code_version()}, {os.cpu_count()} CPUs, {load_average()}")
    with bench_environment() as bench:
        ok = replay_round_trip(args) if args.replay else crash(args, bench) if args.crash else throughput(args)
    print("all goals:", verdict(ok))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
