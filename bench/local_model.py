"""The local model (providers/local_model.py): how fast it answers, directly and through /v1.

    .venv/bin/python bench/local_model.py [--concurrency 1,4,8] [--requests 16] [--threads 1] [--skip-proxy]

llama.cpp's server (`python -m llama_cpp.server`, as `manage.py up` starts it) on the shipped
SmolLM2-135M-Instruct GGUF, with `--threads` CPU threads, on a free loopback port; then the
real stack (bench/harness.py: uvicorn, a prefork x 2 Celery worker, PostgreSQL and Redis) with
a pool of that server made as `manage.py bootstrap` makes the demo pool's local endpoint.

1. **One stream, directly** (the official `openai` client, `stream=True`, max_tokens 64,
   temperature 0): time to first token, and tokens per second after it (the server
   sends a chunk per token: chunks over the time from the first token to the last).
2. **Throughput at each concurrency**, every request the same question ("Name three colours."),
   directly (`openai` client to the server), through LiteLLM Proxy (bench/gateway.py's, from
   bench/litellm_proxy.py, in its own virtual environment, with this server as its one model)
   and through Orchestra's `/v1` (model `orchestra`, the default policy, the pool of the local
   endpoint only): requests per second, completion tokens per second, p50 / p95 latency,
   errors. The model samples, and /v1 passes no `max_tokens`, so answers differ in length from
   call to call: the routes' latencies do not compare, only their overheads do.
3. **Each gateway's overhead**: for each request, the client's latency less the model call's
   own time as the gateway measured it. For /v1, the run's attempts' `latency_s` (the
   provider call inside the studio, through litellm's OpenAI-compatible provider). For the
   proxy, its `x-litellm-response-duration-ms` less its `x-litellm-overhead-duration-ms`
   (the proxy's own figure for its time outside the model call). p50 and p95, per
   concurrency.

On 2 cores, the server's thread and the gateways' processes share the machine: the figures
are this machine's, and concurrency above the server's slots queues in the server. Goals
(MET / NOT MET): at concurrency 1, /v1's p50 overhead under 15 ms, and below LiteLLM Proxy's
(`--skip-proxy` leaves the proxy out, and that goal NOT MET).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
    load_average,
    percentile,
    verdict,
)
from bench.processes import free_port, start_server  # noqa: E402

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
    overheads: list[float] = field(default_factory=list)  # gateways: client latency - the call's own
    runs: list[int] = field(default_factory=list)  # /v1: the run of each answer, in order


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
                tokens, run_id, call_s = await ask()
            except Exception as exc:
                block.errors += 1
                print(f"  {route}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                continue
            latency = time.perf_counter() - began
            block.latencies.append(latency)
            block.tokens += tokens
            if run_id is not None:
                block.runs.append(run_id)
            if call_s is not None:
                block.overheads.append(latency - call_s)

    began = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    block.wall_s = time.perf_counter() - began
    return block


def direct_ask(base_url: str) -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=TIMEOUT_S)

    async def ask() -> tuple[int, None, None]:
        reply = await client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": QUESTION}])
        return (reply.usage.completion_tokens if reply.usage else 0), None, None

    return ask


def proxy_ask(base_url: str, key: str) -> Any:
    """The proxy's answers, each with the model call's time by the proxy's own headers."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=TIMEOUT_S)

    async def ask() -> tuple[int, None, float | None]:
        raw = await client.chat.completions.with_raw_response.create(
            model="smollm2", messages=[{"role": "user", "content": QUESTION}]
        )
        reply = raw.parse()
        total, outside = (raw.headers.get(f"x-litellm-{part}-duration-ms") for part in ("response", "overhead"))
        call_s = (float(total) - float(outside)) / 1000 if total and outside else None
        return (reply.usage.completion_tokens if reply.usage else 0), None, call_s

    return ask


def proxy_config(model_url: str) -> str:
    """LiteLLM Proxy's config: the local server as its one model, as the pool has it."""
    import yaml

    params = {"model": "openai/smollm2", "api_base": model_url, "api_key": "no-key"}
    config = {"model_list": [{"model_name": "smollm2", "litellm_params": params}],
              "router_settings": {"num_retries": 0}}  # fmt: skip
    return str(yaml.safe_dump(config, sort_keys=False))


def orchestra_ask(base_url: str, token: str) -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=TIMEOUT_S)

    async def ask() -> tuple[int, int, None]:
        raw = await client.chat.completions.with_raw_response.create(
            model="orchestra", messages=[{"role": "user", "content": QUESTION}], extra_body={"pool": POOL}
        )
        reply = raw.parse()
        return (reply.usage.completion_tokens if reply.usage else 0), int(raw.headers["x-orchestra-run-id"]), None

    return ask


async def measure(routes: dict[str, Any], concurrencies: list[int], requests: int) -> list[Block]:
    """Every route at every concurrency, in one event loop (the clients keep their connections)."""
    for route, ask in routes.items():
        await load(f"warm-up {route}", 1, 2, ask)
    blocks = []
    for concurrency in concurrencies:
        for route, ask in routes.items():
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
        f"| {block.route:13} | {block.concurrency:3} | {len(lat):4} | {block.errors:3} | {p50:8.0f} | {p95:8.0f} | "
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
    parser.add_argument("--skip-proxy", action="store_true", help="leave LiteLLM Proxy out")
    args = parser.parse_args()
    concurrencies = [int(x) for x in args.concurrency.split(",") if x.strip()]
    if not concurrencies or min(concurrencies) < 1 or args.requests < 1 or args.threads < 1:
        parser.error("--concurrency takes positive integers, and --requests and --threads positive counts")
    print(f"Local model bench: SmolLM2-135M-Instruct (Q4_1 GGUF) under llama.cpp's server, {args.threads} thread(s); "
          f"concurrency {', '.join(map(str, concurrencies))}, {args.requests} requests each.\n"
          f"Start: {load_average()}; {code_version()}", flush=True)  # fmt: skip
    from bench.litellm_proxy import install_proxy, start_proxy
    from bench.processes import stop
    from providers import local_server as support
    from providers.local_model import Server, check, shipped_file

    script, proxy_problem = install_proxy() if not args.skip_proxy else (None, "--skip-proxy")

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
        with bench_environment() as bench, contextlib.ExitStack() as stack:
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
            stack.callback(stop, server, group=False, grace_s=15)
            token = token_create(user=bench_user(), name=f"local-model-{time.time_ns()}")[1]
            routes = {"direct": direct_ask(spec.url)}
            if script is not None:
                proxy, proxy_problem = start_proxy(script, proxy_config(spec.url), stack)
                if proxy is not None:
                    routes["litellm-proxy"] = proxy_ask(f"http://127.0.0.1:{proxy.port}/v1", proxy.key)
            if "litellm-proxy" not in routes:
                print(f"LiteLLM Proxy: not measured: {proxy_problem}", flush=True)
            routes["/v1"] = orchestra_ask(f"http://127.0.0.1:{port}/v1", token)
            blocks += asyncio.run(measure(routes, concurrencies, args.requests))
    finally:
        support.stop(process)
    print("\n| route | c | ok | err | p50 ms | p95 ms | req/s | tok/s | overhead p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for block in blocks:
        print(row(block))
    met = goals(blocks, proxy_problem)
    print(f"End: {load_average()}")
    return 0 if met else 1


def p50_overhead_ms(blocks: list[Block], route: str) -> float | None:
    """The route's p50 overhead at concurrency 1, in ms; None where it was not measured."""
    block = next((b for b in blocks if b.route == route and b.concurrency == 1 and b.overheads), None)
    return percentile(sorted(block.overheads), 50) * 1000 if block else None


def goals(blocks: list[Block], proxy_problem: str | None) -> bool:
    errors = sum(b.errors for b in blocks)
    ours, theirs = p50_overhead_ms(blocks, "/v1"), p50_overhead_ms(blocks, "litellm-proxy")
    under = ours is not None and ours < OVERHEAD_GOAL_MS and not errors
    shown = "not measured" if ours is None else f"{ours:.1f} ms"
    print(f"\nGoal: /v1's p50 overhead at concurrency 1 under {OVERHEAD_GOAL_MS:g} ms, no errors ({shown}, "
          f"{errors} errors): {verdict(under)}")  # fmt: skip
    if theirs is None:
        why = proxy_problem or "its answers carried no duration headers"
        print(f"Goal: /v1's p50 overhead at concurrency 1 below LiteLLM Proxy's (not measured: {why}): NOT MET")
        return False
    below = ours is not None and ours < theirs
    print(f"Goal: /v1's p50 overhead at concurrency 1 below LiteLLM Proxy's ({shown} against {theirs:.1f} ms): "
          f"{verdict(below)}")  # fmt: skip
    return under and below


if __name__ == "__main__":
    raise SystemExit(main())
