"""Event streaming latency: from an event's commit to its receipt on a WebSocket.

    .venv/bin/python bench/stream_latency.py [--events 1000] [--rates 100,0]

A real ASGI server (uvicorn on studio.asgi:application, in a subprocess) and a real
WebSocket client (`websockets`), authenticated with `Authorization: Bearer <token>`, on
/ws/runs/<id>/. This process appends events to the run with `run_event_append`, each in a
transaction; a callback registered ahead of the event's own notification stamps the time
right after COMMIT. The client stamps each message as it arrives; latency = receipt time -
commit time (one machine, one clock). Each rate (events per second; 0 means as fast as
this process can append) uses its own run and its own connection.
Goal: p95 under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    load_average,
    percentile,
    verdict,
)
from bench.processes import free_port, start_server  # noqa: E402

P95_GOAL_MS = 100.0


def make_run() -> int:
    from studio.models import Run, RunStatus
    from studio.services.tasks import task_create

    owner = bench_user()
    task = task_create(owner=owner, text="stream latency bench", benchmark="bench")
    return Run.objects.create(task=task, owner=owner, status=RunStatus.RUNNING).pk


def _stamper(stamp: dict[str, float]) -> Callable[[], None]:
    def record() -> None:
        stamp["t"] = time.time()

    return record


def append_events(
    run_id: int, count: int, rate: float, commits: dict[int, float], phases: dict[str, list[float]]
) -> None:
    """Append `count` events at `rate` per second (0: no pause); record each commit time by seq,
    and how long each append took: its transaction, then the notification after COMMIT."""
    from django.db import connection, transaction

    from studio.services.events import run_event_append

    interval = 1 / rate if rate else 0.0
    next_at = time.perf_counter()
    try:
        for number in range(count):
            stamp: dict[str, float] = {}
            began = time.time()
            with transaction.atomic():
                # Registered before run_event_append's own notification, so it runs first after COMMIT.
                transaction.on_commit(_stamper(stamp))
                event = run_event_append(
                    run_id=run_id, type="bench.tick", payload={"n": number, "appended_at": time.time()}
                )
            commits[event.seq] = stamp["t"]
            phases["transaction"].append((stamp["t"] - began) * 1000)
            phases["notify"].append((time.time() - stamp["t"]) * 1000)
            if interval:
                next_at += interval
                time.sleep(max(0.0, next_at - time.perf_counter()))
    finally:
        connection.close()


async def receive_events(
    url: str, token: str, origin: str, count: int, receipts: dict[int, float], ready: threading.Event
) -> list[int]:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    order: list[int] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, origin=Origin(origin)) as socket_:
        ready.set()
        while len(order) < count:
            raw = await asyncio.wait_for(socket_.recv(), timeout=30)
            received = time.time()
            message = json.loads(raw)
            receipts[message["seq"]] = received
            order.append(message["seq"])
    return order


def measure(port: int, token: str, count: int, rate: float) -> dict[str, Any]:
    run_id = make_run()
    commits: dict[int, float] = {}
    receipts: dict[int, float] = {}
    phases: dict[str, list[float]] = {"transaction": [], "notify": []}
    ready = threading.Event()

    def append_when_connected() -> None:
        if ready.wait(30):
            append_events(run_id, count, rate, commits, phases)

    appender = threading.Thread(target=append_when_connected)
    appender.start()
    started = time.perf_counter()
    order = asyncio.run(
        receive_events(
            f"ws://127.0.0.1:{port}/ws/runs/{run_id}/?after=0",
            token,
            f"http://127.0.0.1:{port}",
            count,
            receipts,
            ready,
        )
    )
    elapsed = time.perf_counter() - started
    appender.join()
    latencies = [(receipts[seq] - commits[seq]) * 1000 for seq in commits if seq in receipts]
    return {
        "rate": rate,
        "events": len(latencies),
        "in_order": order == list(range(1, count + 1)),
        "elapsed_s": elapsed,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "p99": percentile(latencies, 99),
        "max": max(latencies),
        "transaction_p50": percentile(phases["transaction"], 50),
        "notify_p50": percentile(phases["notify"], 50),
        "load": load_average(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000, help="events per rate (at least 1000)")
    parser.add_argument("--rates", default="100,0", help="comma-separated events per second; 0 = as fast as possible")
    args = parser.parse_args()
    rates = [float(rate) for rate in args.rates.split(",")]

    print(
        "Stream latency bench: run_event_append commit -> WebSocket receipt, through uvicorn + Channels "
        "(Redis channel layer), bearer-token client.\n"
        f"{args.events} events per rate; rates (events/s, 0 = unpaced): {args.rates}.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    with bench_environment() as bench:
        from studio.services.tokens import token_create

        _, token = token_create(user=bench_user(), name=f"stream-bench-{time.time_ns()}")
        port = free_port()
        server = start_server(bench, port)
        try:
            results = [measure(port, token, args.events, rate) for rate in rates]
        finally:
            server.terminate()
            server.wait(timeout=15)

    print(f"  {'rate/s':>7} {'events':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}  order")
    for result in results:
        rate = f"{result['rate']:g}" if result["rate"] else "unpaced"
        achieved = result["events"] / result["elapsed_s"]
        print(
            f"  {rate:>7} {result['events']:>7} {result['p50']:>8.2f} {result['p95']:>8.2f} "
            f"{result['p99']:>8.2f} {result['max']:>8.2f}  {'ok' if result['in_order'] else 'OUT OF ORDER'}"
            f"  ({achieved:.0f} events/s achieved; {result['load']})"
        )
        print(
            f"  {'':>7} appending one event, p50: transaction {result['transaction_p50']:.2f} ms, then "
            f"queueing the notification after COMMIT {result['notify_p50']:.2f} ms"
        )
    for result in results:
        rate = f"{result['rate']:g}/s" if result["rate"] else "unpaced"
        met = result["p95"] < P95_GOAL_MS and result["events"] >= 1000 and result["in_order"]
        print(f"Goal: p95 < {P95_GOAL_MS:.0f} ms over >= 1000 events ({rate}): {verdict(met)}")


if __name__ == "__main__":
    main()
