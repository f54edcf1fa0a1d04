"""Soak: sustained traffic against `make up`'s stack, PostgreSQL connections sampled throughout.

    .venv/bin/python bench/soak.py [--sequential 10000] [--concurrent 10000] [--clients 16]
        [--websockets 1000] [--sample-s 0.5]

`manage.py up` runs as `make up` runs it (uvicorn, a Celery worker with 2 pool processes,
embedded PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set), on a data folder of
its own that the bench empties first (.data/soak, or BENCH_DATA_DIR), so each soak starts
as a fresh clone does. The demo policy's training is off (ORCHESTRA_DEMO_POLICY=false): it
would take the 2 cores for minutes at the start and nothing at the end. Then:

1. `--sequential` chat completions through /v1 with the official `openai` client, one at a
   time, each with a recorded RouterBench prompt (served by the replay pool), each followed
   by GET /api/runs/{id} and GET /api/runs/{id}/tree;
2. `--concurrent` more of the same from `--clients` clients at once;
3. `--websockets` WebSocket connects to /ws/runs/{id}/ of runs from phase 1, `--clients` at a
   time, each reading the run's replayed events up to run.finished, then disconnecting.

A thread reads pg_stat_activity every `--sample-s` seconds: connections per process of the
studio (each names itself, `orchestra <role> <pid>`), for the web server, the worker's
parent and its pool processes. Printed: the maximum per process and in all against the
configured bound (DATABASE_POOL_MAX_SIZE per process), errors, and p50/p95 latency of the
first tenth of each phase against its last tenth.

Goals: 0 errors; no process above the bound; p95 of /v1 at the end within 20% of the start.

The stack and the pg_stat_activity sampler are in bench/soak_stack.py.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import itertools
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import code_version, load_average, percentile, verdict  # noqa: E402
from bench.paths import ROOT  # noqa: E402
from bench.processes import free_port  # noqa: E402
from bench.soak_stack import ConnectionSampler, Stack, process_label, studio_up  # noqa: E402

P95_DRIFT = 0.20  # p95 at the end may be at most this much above p95 at the start


# Traffic


@dataclass
class Phase:
    name: str
    chat_s: list[float] = field(default_factory=list)
    read_s: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    run_ids: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors[what[:160]] += 1


def recorded_prompts(limit: int = 5000) -> list[str]:
    """Distinct RouterBench prompts, every one recorded for every model of the replay pool."""
    seen: dict[str, None] = {}
    with gzip.open(ROOT / "data" / "outcomes" / "routerbench.jsonl.gz", "rt") as lines:
        for line in lines:
            seen.setdefault(json.loads(line)["prompt"], None)
            if len(seen) >= limit:
                break
    return list(seen)


class Client:
    """One user: the official `openai` client on /v1 and an HTTP client on /api."""

    def __init__(self, stack: Stack) -> None:
        import httpx
        from openai import OpenAI

        self.openai = OpenAI(base_url=f"{stack.url}/v1", api_key=stack.token, max_retries=0, timeout=120)
        self.api = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.token}"}, timeout=60)

    def one(self, prompt: str, phase: Phase) -> None:
        """A chat completion, then its run and its tree."""
        started = time.perf_counter()
        try:
            raw = self.openai.chat.completions.with_raw_response.create(
                model="orchestra", messages=[{"role": "user", "content": prompt}]
            )
            raw.parse()
        except Exception as error:  # noqa: BLE001 - every failure is a counted error
            phase.error(f"/v1: {type(error).__name__}: {error}")
            return
        elapsed = time.perf_counter() - started
        run_id = int(raw.headers["x-orchestra-run-id"])
        reads = []
        for path in (f"/api/runs/{run_id}", f"/api/runs/{run_id}/tree"):
            started = time.perf_counter()
            try:
                response = self.api.get(path)
                if response.status_code != 200:
                    phase.error(f"GET {path.replace(str(run_id), '{id}')}: {response.status_code}")
            except Exception as error:  # noqa: BLE001
                phase.error(f"GET {path.replace(str(run_id), '{id}')}: {type(error).__name__}: {error}")
            reads.append(time.perf_counter() - started)
        with phase.lock:
            phase.chat_s.append(elapsed)
            phase.read_s.extend(reads)
            phase.run_ids.append(run_id)


def http_phase(stack: Stack, phase: Phase, prompts: list[str], count: int, clients: int, offset: int) -> None:
    counter = itertools.count()
    lock = threading.Lock()
    report_every = max(1, count // 10)

    def client_loop() -> None:
        client = Client(stack)
        while True:
            with lock:
                n = next(counter)
            if n >= count:
                return
            client.one(prompts[(offset + n) % len(prompts)], phase)
            if (n + 1) % report_every == 0:
                print(f"    {phase.name}: {n + 1}/{count} ({load_average()})", flush=True)

    started = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client_loop) for _ in range(clients)]:
            future.result()
    phase.wall_s = time.monotonic() - started


async def websocket_phase(stack: Stack, phase: Phase, run_ids: list[int], count: int, clients: int) -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    socket_url = stack.url.replace("http://", "ws://", 1)
    counter = itertools.count()

    async def one(run_id: int) -> None:
        started = time.perf_counter()
        try:
            async with connect(
                f"{socket_url}/ws/runs/{run_id}/?after=0", origin=Origin(stack.url), open_timeout=30,
                additional_headers={"Authorization": f"Bearer {stack.token}"},
            ) as socket:  # fmt: skip
                while json.loads(await asyncio.wait_for(socket.recv(), timeout=30))["type"] != "run.finished":
                    pass
        except Exception as error:  # noqa: BLE001
            phase.error(f"WebSocket: {type(error).__name__}: {error}")
            return
        phase.chat_s.append(time.perf_counter() - started)

    async def client_loop() -> None:
        while (n := next(counter)) < count:
            await one(run_ids[n % len(run_ids)])

    started = time.monotonic()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    phase.wall_s = time.monotonic() - started


# Report


def tenth(values: list[float], last: bool) -> list[float]:
    size = max(1, len(values) // 10)
    return values[-size:] if last else values[:size]


def latency_line(label: str, values: list[float]) -> tuple[float, float]:
    start, end = tenth(values, False), tenth(values, True)
    p95_start, p95_end = percentile(start, 95), percentile(end, 95)
    print(
        f"  {label}: n={len(values)}; first tenth p50 {percentile(start, 50) * 1000:.1f} ms, "
        f"p95 {p95_start * 1000:.1f} ms; last tenth p50 {percentile(end, 50) * 1000:.1f} ms, "
        f"p95 {p95_end * 1000:.1f} ms ({(p95_end / p95_start - 1) * 100:+.1f}%)"
    )
    return p95_start, p95_end


def report_phase(phase: Phase, unit: str, goal_p95: bool) -> tuple[int, bool]:
    errors = sum(phase.errors.values())
    done = len(phase.chat_s)
    print(
        f"{phase.name}: {done} {unit} in {phase.wall_s:.0f} s ({done / max(phase.wall_s, 1e-9):.1f}/s), "
        f"errors {errors} ({load_average()})"
    )
    for what, n in phase.errors.most_common(5):
        print(f"    {n} x {what}")
    p95_start, p95_end = latency_line(unit, phase.chat_s)
    if phase.read_s:
        latency_line("run and tree reads", phase.read_s)
    drift_ok = p95_end <= p95_start * (1 + P95_DRIFT)
    return errors, drift_ok if goal_p95 else True


def memory_mb(pids: Callable[[], list[int]]) -> float:
    import psutil

    total = 0
    for pid in pids():
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequential", type=int, default=10_000, help="/v1 requests one at a time (default 10000)")
    parser.add_argument("--concurrent", type=int, default=10_000, help="/v1 requests, --clients at once")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--websockets", type=int, default=1000, help="WebSocket connects and disconnects")
    parser.add_argument("--concurrency", type=int, default=2, help="the worker's pool processes (as `up`)")
    parser.add_argument("--sample-s", type=float, default=0.5, help="seconds between pg_stat_activity reads")
    args = parser.parse_args()
    if min(args.sequential, args.clients) < 1 or min(args.concurrent, args.websockets) < 0 or args.sample_s <= 0:
        parser.error("--sequential and --clients must be at least 1, the other counts at least 0")
    print(
        f"Soak bench: `manage.py up` (demo policy off), {args.sequential} sequential /v1 requests with run "
        f"and tree reads, {args.concurrent} more at concurrency {args.clients}, {args.websockets} WebSocket "
        f"connects; pg_stat_activity every {args.sample_s:g} s.\nStart: {load_average()}; {code_version()}",
        flush=True,
    )
    import httpx
    import psutil

    prompts = recorded_prompts()
    with studio_up(free_port(), args.concurrency) as stack:
        up = psutil.Process(stack.up.pid)
        web_pids = [child.pid for child in up.children() if "uvicorn" in " ".join(child.cmdline())]
        sampler = ConnectionSampler(stack.database_url, args.sample_s)
        sampler.start()
        web_start_mb = memory_mb(lambda: web_pids)
        phases = []
        sampler.phase = "sequential"
        sequential = Phase("Phase 1, sequential")
        http_phase(stack, sequential, prompts, args.sequential, 1, 0)
        phases.append((sequential, "/v1 chat completions", True))
        if args.concurrent:
            sampler.phase = "concurrent"
            concurrent = Phase(f"Phase 2, {args.clients} at once")
            http_phase(stack, concurrent, prompts, args.concurrent, args.clients, args.sequential)
            phases.append((concurrent, "/v1 chat completions", True))
        if args.websockets and sequential.run_ids:
            sampler.phase = "websockets"
            sockets = Phase("Phase 3, WebSockets")
            asyncio.run(websocket_phase(stack, sockets, sequential.run_ids, args.websockets, args.clients))
            phases.append((sockets, "WebSocket connect to run.finished", False))
        web_end_mb = memory_mb(lambda: web_pids)
        time.sleep(args.sample_s * 2)
        sampler.stopped.set()
        sampler.join(timeout=10)
        labels = {pid: process_label(pid, role, stack.up.pid) for pid, role in sampler.role.items()}
        health_status = httpx.get(f"{stack.url}/api/health", timeout=10).status_code

    print()
    errors, drift_ok = 0, True
    for phase, unit, goal_p95 in phases:
        phase_errors, phase_ok = report_phase(phase, unit, goal_p95)
        errors, drift_ok = errors + phase_errors, drift_ok and phase_ok
    bound = stack.bound_per_process
    total = bound * stack.processes
    print(f"PostgreSQL connections ({sampler.samples} samples; bound {bound} per process, {total} in all):")
    for pid, peak in sorted(sampler.per_pid.items()):
        print(f"  {labels[pid]:<20} pid {pid:<8} max {peak}")
    print("  in all, max " + ", ".join(f"{name} {peak}" for name, peak in sampler.phase_max.items() if name != "start"))
    print(f"  web server memory: {web_start_mb:.0f} MB at the start, {web_end_mb:.0f} MB at the end")
    print(f"  /api/health at the end: {health_status}; sampler errors: {len(sampler.errors)}")
    over = {pid: peak for pid, peak in sampler.per_pid.items() if bound == 0 or peak > bound}
    print(f"End: {load_average()}")
    print(f"Goal: 0 errors: {verdict(errors == 0 and not sampler.errors)} ({errors})")
    print(
        f"Goal: no process above {bound} connections: {verdict(not over and sampler.samples > 0)} "
        f"(max {max(sampler.per_pid.values(), default=0)} per process, {sampler.total_max} in all)"
    )
    print(f"Goal: /v1 p95 at the end within {P95_DRIFT:.0%} of the start: {verdict(drift_ok)}")


if __name__ == "__main__":
    main()
