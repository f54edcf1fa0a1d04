"""Load: 50 concurrent runs on the replay pool while 100 WebSocket clients watch them.

    .venv/bin/python bench/load.py [--runs 50] [--clients 100] [--items 4] [--latency uniform:0.5,1.5]

The studio as `make up` runs it: one uvicorn web process and one Celery worker
(prefork, 2 processes, queues orchestrator and workers), on embedded PostgreSQL and Redis
(or those of DATABASE_URL / REDIS_URL). Replay calls sleep a simulated latency
(ORCHESTRA_REPLAY_LATENCY, default uniform 0.5 to 1.5 s). `--runs` composite tasks of
`--items` recorded RouterBench items start at once; `--clients` WebSocket clients
(`Authorization: Bearer`, two per run by default) connect right after, each to one run,
and read its events until `run.finished`.

Printed:
- errors (goal 0): client errors and refused connections, gaps or repeats in a client's
  sequence numbers, clients that never saw their run end, runs that did not succeed;
- event latency (goal p95 < 250 ms): from the event's `created_at` (stamped inside the
  transaction that commits it) to its receipt by a client, over the events each client
  received live (created after it connected; the replayed backlog is not counted);
- runs per minute, from the first run's creation to the last run's end;
- peak resident memory of each kind of process: web, worker (main + pool), PostgreSQL,
  Redis, and this bench (the clients).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    composite_tasks,
    load_average,
    percentile,
    process_tree,
    replay_pool,
    verdict,
    wait_runs,
)
from bench.processes import free_port, start_server  # noqa: E402

P95_GOAL_MS = 250.0


@dataclass
class Watch:
    """What one client saw of one run."""

    run_id: int
    seqs: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    ended: bool = False
    error: str = ""


async def watch(url: str, origin: str, token: str, run_id: int, into: Watch, timeout_s: float) -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    try:
        async with connect(
            f"{url}/ws/runs/{run_id}/?after=0", additional_headers={"Authorization": f"Bearer {token}"},
            origin=Origin(origin), open_timeout=30,
        ) as socket:  # fmt: skip
            connected = time.time()
            deadline = time.monotonic() + timeout_s
            while not into.ended:
                raw = await asyncio.wait_for(socket.recv(), timeout=max(0.1, deadline - time.monotonic()))
                received = time.time()
                message = json.loads(raw)
                into.seqs.append(message["seq"])
                created = datetime.fromisoformat(message["created_at"]).timestamp()
                if created >= connected:
                    into.latencies_ms.append((received - created) * 1000)
                into.ended = message["type"] == "run.finished"
    except (TimeoutError, OSError, Exception) as error:  # noqa: BLE001 - every failure is a counted error
        into.error = f"{type(error).__name__}: {error}"


async def watch_all(url: str, token: str, runs: list[int], clients: int, timeout_s: float) -> list[Watch]:
    watches = [Watch(runs[number % len(runs)]) for number in range(clients)]
    socket_url = url.replace("http://", "ws://", 1)
    await asyncio.gather(*(watch(socket_url, url, token, w.run_id, w, timeout_s) for w in watches))
    return watches


class MemoryPeak(threading.Thread):
    """Samples the resident memory of each group of processes; keeps each group's peak."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]], every_s: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.groups, self.every_s = groups, every_s
        self.peak_mb = dict.fromkeys(groups, 0.0)
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            for name, pids in self.groups.items():
                total = 0
                for pid in pids():
                    try:
                        total += psutil.Process(pid).memory_info().rss
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        continue
                self.peak_mb[name] = max(self.peak_mb[name], total / 2**20)
            self.stop.wait(self.every_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--items", type=int, default=4, help="recorded items per composite run")
    parser.add_argument("--latency", default="uniform:0.5,1.5", help="ORCHESTRA_REPLAY_LATENCY of the worker")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a client waits for its run")
    args = parser.parse_args()
    print(
        f"Load bench: {args.runs} composite runs x {args.items} recorded items, replay latency {args.latency}, "
        f"{args.clients} WebSocket clients; web: 1 uvicorn, worker: prefork x 2.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    with bench_environment() as bench:
        from django.db.models import Max, Min

        from studio.models import Run
        from studio.services.runs import run_create
        from studio.services.tokens import token_create

        pool_id = replay_pool()
        tasks = composite_tasks(runs=args.runs, items=args.items)
        owner = bench_user()
        _, token = token_create(user=owner, name=f"load-{time.time_ns()}")
        worker = bench.start_worker(
            "load", pool="prefork", concurrency=2, env={"ORCHESTRA_REPLAY_LATENCY": args.latency}
        )
        bench.wait_workers_ready([worker])
        port = free_port()
        server = start_server(bench, port)
        memory = MemoryPeak({
            "web": process_tree(server.pid), "worker": worker.pids,
            "postgres": process_tree(bench.postgres_pid), "redis": process_tree(bench.redis_pid),
            "bench (clients)": lambda: [os.getpid()],
        })  # fmt: skip
        memory.start()
        try:
            runs = [run_create(owner=owner, task_id=task, pool_id=pool_id).pk for task in tasks]
            watches = asyncio.run(watch_all(f"http://127.0.0.1:{port}", token, runs, args.clients, args.timeout))
            statuses = wait_runs(runs, timeout_s=args.timeout)
        finally:
            memory.stop.set()
            memory.join()
            server.terminate()
            server.wait(timeout=15)
        span = Run.objects.filter(pk__in=runs).aggregate(first=Min("created_at"), last=Max("finished_at"))
        reasons = dict(Run.objects.filter(pk__in=runs).exclude(status="succeeded").values_list("pk", "end_reason"))

    client_errors = [w for w in watches if w.error]
    broken = [w for w in watches if not w.error and w.seqs != list(range(1, len(w.seqs) + 1))]
    unended = [w for w in watches if not w.error and not w.ended]
    failed = {run: status for run, status in statuses.items() if status != "succeeded"}
    errors = len(client_errors) + len(broken) + len(unended) + len(failed)
    latencies = [ms for w in watches for ms in w.latencies_ms]
    minutes = (span["last"] - span["first"]).total_seconds() / 60 if span["last"] else float("nan")
    print(f"  runs: {len(runs) - len(failed)}/{len(runs)} succeeded; {len(runs) / minutes:.1f} runs/min")
    print(
        f"  clients: {len(watches)}; errors {len(client_errors)}, sequence gaps or repeats {len(broken)}, "
        f"never saw the end {len(unended)}"
    )
    for w in client_errors[:5]:
        print(f"    client of run {w.run_id}: {w.error}")
    for run, reason in list(reasons.items())[:5]:
        print(f"    run {run} {statuses.get(run)}: {reason}")
    print(
        f"  event latency (created -> received, live events): n={len(latencies)}, "
        f"p50 {percentile(latencies, 50):.1f} ms, p95 {percentile(latencies, 95):.1f} ms, "
        f"max {max(latencies, default=float('nan')):.1f} ms"
    )
    print("  peak memory: " + ", ".join(f"{name} {mb:.0f} MB" for name, mb in memory.peak_mb.items()))
    print(f"  ({load_average()})")
    print(f"Goal: 0 errors: {verdict(errors == 0)} ({errors})")
    print(f"Goal: event latency p95 < {P95_GOAL_MS:.0f} ms: {verdict(percentile(latencies, 95) < P95_GOAL_MS)}")


if __name__ == "__main__":
    main()
