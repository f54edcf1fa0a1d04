"""Gateway overhead: one scripted upstream called directly through litellm, through the real
LiteLLM Proxy, and through Orchestra's /v1, at several concurrencies.

    .venv/bin/python bench/gateway.py [--concurrency 1,16,64] [--requests 200] [--skip-proxy]

The upstream is the scripted OpenAI-compatible server (providers/scripted_openai.py) in a
process of its own on 127.0.0.1: every reply at once, content "42", 10 + 5 tokens. The same
prompts reach it by three routes:

1. direct: `litellm.acompletion(model="openai/scripted", api_base=<upstream>)` in this process,
   no retries;
2. litellm-proxy: the LiteLLM Proxy of the project's litellm version, started here on 127.0.0.1
   (`litellm --config ... --num_workers 1`, no database, a random master key, router retries
   off) from a virtual environment of its own, so the project's .venv is never changed:
   `<bench data>/litellm-proxy-venv`, made on first use with that litellm and the dependencies
   its `proxy` extra names, installed by name (the extra also names litellm-proxy and
   litellm-enterprise, which the registry here lacks; a pin the registry lacks is left out and
   printed), and reused afterwards. Its log: `<bench data>/logs/litellm-proxy.log`;
3. orchestra: `/v1/chat/completions` of the real stack (bench/harness.py: uvicorn, a prefork x 2
   Celery worker, PostgreSQL and Redis), model `orchestra` (the default policy), extra body
   `{"pool": "bench-gateway"}`: a pool made from the same LiteLLM config
   (`pool_from_litellm_config`: one endpoint, primitive `direct` admissible). The default
   policy is the data folder's: a learned checkpoint that another bench made the default
   (synthetic_loop.py's training job does) decides the runs there, and is slower than none;
   the line `Orchestra: ...` says which policy ran.

The proxy and Orchestra are called with the official `openai` async client (max_retries=0).
After a warm-up of each route, at each concurrency every route gets the same `--requests`
prompts (at least 4 x the concurrency), from that many callers at once. The routes take turns,
`--rounds` (10) times, each turn a share of the prompts, so that a few slow seconds of the
machine fall on every route alike. An error is a request that raised or did not answer "42";
latencies are of the others.

Printed, one row per concurrency and route: requests, errors, p50 / p95 / p99 latency, the
overhead over the direct call (p50 and p95 minus the direct call's at that concurrency), and
requests per second.
Goals: at concurrency 1, Orchestra's overhead (p50 and p95) below LiteLLM Proxy's, and both
under 15 ms; at concurrency 64, no errors, and Orchestra's p95 overhead within 2x LiteLLM
Proxy's.

The upstream and the LiteLLM config are in bench/gateway_upstream.py, the proxy in
bench/litellm_proxy.py, the routes and the load in bench/gateway_load.py, and the report and
the goals in bench/gateway_report.py.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gateway_load import direct_route, measure, openai_route  # noqa: E402
from bench.gateway_report import goals, report  # noqa: E402
from bench.gateway_upstream import KEY_ENV, MODEL, UPSTREAM_KEY, Upstream, litellm_config, serve  # noqa: E402
from bench.harness import (  # noqa: E402
    TERMINAL,
    bench_environment,
    bench_user,
    code_version,
    forget_pool,
    load_average,
)
from bench.litellm_proxy import install_proxy, start_proxy  # noqa: E402
from bench.processes import free_port, start_server, stop  # noqa: E402

POOL = "bench-gateway"


# Orchestra's side.


def orchestra_pool(config: str) -> None:
    from studio.services.litellm_config import pool_from_litellm_config

    forget_pool(POOL)
    pool_from_litellm_config(name=POOL, text=config, environ={KEY_ENV: UPSTREAM_KEY}, description="bench/gateway.py")


def settle(bench: Any, timeout_s: float = 60.0) -> None:
    """Wait until Orchestra has nothing left to do (no queued message, no run of the pool going),
    so that its tail does not run into the next route's figures."""
    from studio.models import Run

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        going = Run.objects.filter(pool__name=POOL).exclude(status__in=TERMINAL).exists()
        if not going and bench.queued_messages() == 0:
            return
        time.sleep(0.2)


def orchestra_policies() -> str:
    """Which policy decided Orchestra's runs: model `orchestra` takes the data folder's default
    (a learned checkpoint another bench made the default, or none)."""
    from studio.models import Run

    rows = Run.objects.filter(pool__name=POOL).values_list("policy", "checkpoint__name")
    counts = Counter(policy + (f" (checkpoint {name})" if name else "") for policy, name in rows)
    return ", ".join(f"{count} runs of policy {policy}" for policy, count in counts.most_common())


# The run.


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,16,64", help="callers at once, comma-separated")
    parser.add_argument("--requests", type=int, default=200, help="requests per route and concurrency (>= 4 x it)")
    parser.add_argument("--rounds", type=int, default=10, help="turns the routes take at each concurrency")
    parser.add_argument("--skip-proxy", action="store_true", help="measure the direct call and Orchestra only")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the upstream's own process
    args = parser.parse_args()
    if args.serve:
        serve()
    concurrencies = [int(x) for x in args.concurrency.split(",") if x.strip()]
    if not concurrencies or min(concurrencies) < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--concurrency takes positive integers, and --requests and --rounds positive counts")
    print(
        f"Gateway bench: a 0-latency scripted upstream directly through litellm, through LiteLLM Proxy and through "
        f"Orchestra's /v1, at concurrency {', '.join(map(str, concurrencies))}, {args.requests} requests each "
        f"(at least 4 x the concurrency).\nStart: {load_average()}; {code_version()}",
        flush=True,
    )
    started = time.monotonic()
    script, proxy_problem = install_proxy() if not args.skip_proxy else (None, "--skip-proxy")
    with bench_environment() as bench, Upstream() as upstream, contextlib.ExitStack() as stack:
        from studio.services.tokens import token_create

        config = litellm_config(upstream.base_url)
        print(f"upstream: {upstream.base_url}", flush=True)
        proxy = None
        if script is not None:
            proxy, proxy_problem = start_proxy(script, config, stack)
        if proxy is None:
            print(f"LiteLLM Proxy: not measured: {proxy_problem}", flush=True)
        orchestra_pool(config)
        worker = bench.start_worker("gateway", pool="prefork", concurrency=2)
        bench.wait_workers_ready([worker])
        port = free_port()
        server = start_server(bench, port)
        stack.callback(stop, server, group=False, grace_s=15)
        token = token_create(user=bench_user(), name=f"gateway-{time.time_ns()}")[1]
        routes = {"direct": direct_route(upstream.base_url)}
        if proxy is not None:
            routes["litellm-proxy"] = openai_route(f"http://127.0.0.1:{proxy.port}/v1", proxy.key, MODEL)
        routes["orchestra"] = openai_route(f"http://127.0.0.1:{port}/v1", token, "orchestra", {"pool": POOL})
        print(f"stack up in {time.monotonic() - started:.0f} s; measuring ({load_average()})", flush=True)

        def after(route: str) -> None:
            if route == "orchestra":
                settle(bench)

        blocks = asyncio.run(measure(routes, concurrencies, args.requests, args.rounds, after))
        print(f"Orchestra: {orchestra_policies()}", flush=True)
    report(blocks)
    met = goals(blocks, proxy_problem)
    print(f"\nIn all {time.monotonic() - started:.0f} s. End: {load_average()}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
