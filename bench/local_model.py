"""The local model (studio/local_model.py): how fast it answers, directly and through /v1.

    .venv/bin/python bench/local_model.py [--concurrency 1,4,8] [--requests 16] [--threads 1]

llama.cpp's server (`python -m llama_cpp.server`, as `manage.py up` starts it) on the shipped
SmolLM2-135M-Instruct GGUF, with `--threads` CPU threads, on a free loopback port; then the
real stack (bench/harness.py: uvicorn, a prefork x 2 Celery worker, PostgreSQL and Redis) with
a pool of that server made as `manage.py bootstrap` makes the demo pool's local endpoint.

1. **One stream, directly** (the official `openai` client, `stream=True`, max_tokens 64,
   temperature 0): time to first token, and tokens per second after it (the server
   sends a chunk per token: chunks over the time from the first token to the last).
2. **Throughput at each concurrency**, every request the same question ("Name three colours."),
   directly (`openai` client to the server) and through Orchestra's `/v1` (model `orchestra`,
   the default policy, the pool of the local endpoint only): requests per second, completion
   tokens per second, p50 / p95 latency, errors. /v1 passes no `max_tokens`, so the model
   writes its whole answer: its latencies are not the direct route's.
3. **/v1's overhead**: for each /v1 request, the client's latency less the model call's own
   time as the run recorded it (the attempt's `latency_s`: the provider call inside the studio,
   made through litellm's OpenAI-compatible provider). p50 and p95, per concurrency.

On 2 cores, the server's thread and the studio's processes share the machine: the figures are
this machine's, and concurrency above the server's slots queues in the server. Goal (MET /
NOT MET): at concurrency 1, /v1's p50 overhead under 15 ms, the gateway goal
(bench/gateway.py compares it with LiteLLM Proxy on a 0-latency upstream).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    forget_pool,
    free_port,
    load_average,
    percentile,
    start_server,
    verdict,
)

POOL = "bench-local-model"
QUESTION = "Name three colours."
OVERHEAD_GOAL_MS = 15.0
TIMEOUT_S = 300.0


@dataclass
class Block:
    route: str
    concurrency: int
    latencies: list[float] = field(default_factory=list)
    tokens: int = 0
    errors: int = 0
    wall_s: float = 0.0
    overheads: list[float] = field(default_factory=list)  # /v1 only: client latency - the call's own
    runs: list[int] = field(default_factory=list)


def one_stream(base_url: str) -> tuple[float, float, int]:
    """(time to first token, tokens per second after it, completion tokens) of one streamed call."""
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=TIMEOUT_S)
    began = time.perf_counter()
    first = last = 0.0
    tokens = 0
    for chunk in client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Write one sentence about the sea."}],
        max_tokens=64, temperature=0, stream=True, stream_options={"include_usage": True},
    ):  # fmt: skip
        now = time.perf_counter() - began
        if chunk.choices and chunk.choices[0].delta.content:  # a chunk per token; no usage in a stream
            first = first or now
            last = now
            tokens += 1
    return first, (tokens - 1) / (last - first) if last > first and tokens > 1 else 0.0, tokens


async def load(route: str, concurrency: int, requests: int, ask: Any) -> Block:
    block = Block(route, concurrency)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)

    async def caller() -> None:
        while not queue.empty():
            queue.get_nowait()
            began = time.perf_counter()
            try:
                tokens, run_id = await ask()
            except Exception as exc:
                block.errors += 1
                print(f"  {route}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                continue
            block.latencies.append(time.perf_counter() - began)
            block.tokens += tokens
            if run_id is not None:
                block.runs.append(run_id)

    began = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    block.wall_s = time.perf_counter() - began
    return block


def direct_ask(base_url: str) -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=TIMEOUT_S)

    async def ask() -> tuple[int, None]:
        reply = await client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": QUESTION}])
        return (reply.usage.completion_tokens if reply.usage else 0), None

    return ask


def orchestra_ask(base_url: str, token: str) -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=TIMEOUT_S)

    async def ask() -> tuple[int, int]:
        raw = await client.chat.completions.with_raw_response.create(
            model="orchestra", messages=[{"role": "user", "content": QUESTION}], extra_body={"pool": POOL}
        )
        reply = raw.parse()
        return (reply.usage.completion_tokens if reply.usage else 0), int(raw.headers["x-orchestra-run-id"])

    return ask


async def measure(model_url: str, v1_url: str, token: str, concurrencies: list[int], requests: int) -> list[Block]:
    """Every route at every concurrency, in one event loop (the clients keep their connections)."""
    direct, orchestra = direct_ask(model_url), orchestra_ask(v1_url, token)
    await load("warm-up", 1, 2, orchestra)
    blocks = []
    for concurrency in concurrencies:
        for route, ask in (("direct", direct), ("/v1", orchestra)):
            block = await load(route, concurrency, max(requests, concurrency), ask)
            if block.runs:
                times = await asyncio.to_thread(call_times, block.runs)
                # latencies and runs line up: both appended per answered request
                pairs = zip(block.latencies, block.runs, strict=True)
                block.overheads = [lat - times[run] for lat, run in pairs if run in times]
            blocks.append(block)
            print(row(block), flush=True)
    return blocks


def call_times(run_ids: list[int], timeout_s: float = 60.0) -> dict[int, float]:
    """Each run's model-call time (the sum of its attempts' latency_s), once its rows are written."""
    from django.db.models import Sum

    from studio.models import Attempt

    deadline = time.monotonic() + timeout_s
    found: dict[int, float] = {}
    while time.monotonic() < deadline:
        rows = Attempt.objects.filter(node__run_id__in=run_ids).values("node__run_id").annotate(s=Sum("latency_s"))
        found = {row["node__run_id"]: float(row["s"] or 0.0) for row in rows}
        if len(found) == len(set(run_ids)):
            break
        time.sleep(0.2)
    return found


def row(block: Block) -> str:
    lat = sorted(block.latencies)
    p50 = percentile(lat, 50) * 1000 if lat else float("nan")
    p95 = percentile(lat, 95) * 1000 if lat else float("nan")
    line = (
        f"| {block.route:9} | {block.concurrency:3} | {len(lat):4} | {block.errors:3} | {p50:8.0f} | {p95:8.0f} | "
        f"{len(lat) / block.wall_s:6.2f} | {block.tokens / block.wall_s:7.1f} |"
    )
    if block.overheads:
        over = sorted(block.overheads)
        line += f" {percentile(over, 50) * 1000:6.1f} | {percentile(over, 95) * 1000:6.1f} |"
    else:
        line += "      – |      – |"
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,4,8", help="callers at once, comma-separated")
    parser.add_argument("--requests", type=int, default=16, help="requests per route and concurrency")
    parser.add_argument(
        "--threads", type=int, default=1, help="the server's CPU threads (ORCHESTRA_LOCAL_MODEL_THREADS)"
    )
    args = parser.parse_args()
    concurrencies = [int(x) for x in args.concurrency.split(",") if x.strip()]
    print(f"Local model bench: SmolLM2-135M-Instruct (Q4_1 GGUF) under llama.cpp's server, {args.threads} thread(s); "
          f"concurrency {', '.join(map(str, concurrencies))}, {args.requests} requests each.\n"
          f"Start: {load_average()}; {code_version()}", flush=True)  # fmt: skip
    from studio.local_model import Server, check, shipped_file
    from tests.support import local_model as support

    spec = Server(file=shipped_file(), name="smollm2", host="127.0.0.1", port=free_port(), threads=args.threads,
                  context=2048)  # fmt: skip
    started = time.perf_counter()
    process = support.start(spec)
    print(f"server ready in {time.perf_counter() - started:.1f} s at {spec.url} ({check(spec.url, spec.name)['ok']})")
    blocks: list[Block] = []
    try:
        streams = [one_stream(spec.url) for _ in range(5)]
        ttft = statistics.median(s[0] for s in streams)
        rate = statistics.median(s[1] for s in streams)
        print(f"\nOne stream, directly (5 calls, max_tokens 64, temperature 0): time to first token "
              f"{ttft * 1000:.0f} ms (median), {rate:.0f} tokens/s after it (median; {streams[0][2]} tokens)",
              flush=True)  # fmt: skip
        with bench_environment() as bench:
            from django.conf import settings

            from studio.services.bootstrap import LocalModel, local_endpoint_ensure
            from studio.services.tokens import token_create

            forget_pool(POOL)
            price = settings.ORCHESTRA_LOCAL_MODEL_PRICE
            local = LocalModel(url=spec.url, name=spec.name, price_per_mtok=price, context=spec.context)
            local_endpoint_ensure(pool_name=POOL, local=local)
            worker = bench.start_worker("local-model", pool="prefork", concurrency=2)
            bench.wait_workers_ready([worker])
            port = free_port()
            server = start_server(bench, port)
            try:
                token = token_create(user=bench_user(), name=f"local-model-{time.time_ns()}")[1]
                blocks += asyncio.run(measure(spec.url, f"http://127.0.0.1:{port}/v1", token, concurrencies,
                                              args.requests))  # fmt: skip
            finally:
                server.terminate()
                server.wait(timeout=15)
    finally:
        support.stop(process)
    print("\n| route | c | ok | err | p50 ms | p95 ms | req/s | tok/s | overhead p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for block in blocks:
        print(row(block))
    first = next((b for b in blocks if b.route == "/v1" and b.concurrency == 1 and b.overheads), None)
    overhead = percentile(first.overheads, 50) * 1000 if first else float("inf")
    met = overhead < OVERHEAD_GOAL_MS and not any(b.errors for b in blocks)
    print(f"\n/v1's p50 overhead at concurrency 1: {overhead:.1f} ms (goal: under {OVERHEAD_GOAL_MS:g} ms, no errors): "
          f"{verdict(met)}. End: {load_average()}")  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
