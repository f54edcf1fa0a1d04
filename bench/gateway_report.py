"""The gateway bench's report and goals (bench/gateway.py): one row per concurrency and route
(requests, errors, p50 / p95 / p99 latency, the overhead over the direct call, requests per
second), then each goal's MET / NOT MET.
"""

from __future__ import annotations

from bench.gateway_load import Block
from bench.measure import verdict

OVERHEAD_GOAL_MS = 15.0


def overhead(block: Block, blocks: list[Block], q: float) -> float:
    direct = next(b for b in blocks if b.route == "direct" and b.concurrency == block.concurrency)
    return block.ms(q) - direct.ms(q)


def report(blocks: list[Block]) -> None:
    print(
        f"\n{'conc':>4}  {'route':14} {'requests':>8} {'errors':>6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}"
        f" {'+p50 ms':>9} {'+p95 ms':>9} {'req/s':>8}"
    )
    for block in blocks:
        over = f"{'-':>9} {'-':>9}"
        if block.route != "direct":
            over = f"{overhead(block, blocks, 50):+9.1f} {overhead(block, blocks, 95):+9.1f}"
        print(
            f"{block.concurrency:>4}  {block.route:14} {block.requests:>8} {block.error_count:>6} {block.ms(50):9.1f}"
            f" {block.ms(95):9.1f} {block.ms(99):9.1f} {over} {len(block.latencies) / block.wall_s:8.1f}"
        )
    for block in blocks:
        if block.errors:
            print(f"  errors, c={block.concurrency} {block.route}: {dict(block.errors)}")


def find(blocks: list[Block], route: str, concurrency: int) -> Block | None:
    return next((b for b in blocks if b.route == route and b.concurrency == concurrency), None)


def goals(blocks: list[Block], proxy_problem: str | None) -> bool:
    """Print each goal's MET / NOT MET; whether all are met."""
    met = []
    orchestra, proxy = find(blocks, "orchestra", 1), find(blocks, "litellm-proxy", 1)
    no_proxy = f"LiteLLM Proxy not measured: {proxy_problem}"
    if orchestra is None:
        print("Goal: at concurrency 1 (not measured: --concurrency has no 1): NOT MET")
        met.append(False)
    else:
        o50, o95 = overhead(orchestra, blocks, 50), overhead(orchestra, blocks, 95)
        if proxy is None:
            print(f"Goal: at concurrency 1, Orchestra's overhead below LiteLLM Proxy's ({no_proxy}): NOT MET")
            met.append(False)
        else:
            p50, p95 = overhead(proxy, blocks, 50), overhead(proxy, blocks, 95)
            below = o50 < p50 and o95 < p95
            print(
                f"Goal: at concurrency 1, Orchestra's overhead below LiteLLM Proxy's (p50 {o50:+.1f} vs {p50:+.1f} ms, "
                f"p95 {o95:+.1f} vs {p95:+.1f} ms): {verdict(below)}"
            )
            met.append(below)
        under = o50 < OVERHEAD_GOAL_MS and o95 < OVERHEAD_GOAL_MS
        print(
            f"Goal: at concurrency 1, Orchestra's overhead under {OVERHEAD_GOAL_MS:g} ms at p50 ({o50:+.1f}) and p95 "
            f"({o95:+.1f}): {verdict(under)}"
        )
        met.append(under)
    wide = [b for b in blocks if b.concurrency == 64]
    if not wide:
        print("Goal: at concurrency 64 (not measured: --concurrency has no 64): NOT MET")
        return False
    clean = all(b.error_count == 0 for b in wide)
    counts = ", ".join(f"{b.route} {b.error_count}" for b in wide)
    print(f"Goal: at concurrency 64, no errors ({counts}): {verdict(clean)}")
    met.append(clean)
    orchestra, proxy = find(blocks, "orchestra", 64), find(blocks, "litellm-proxy", 64)
    if orchestra is None or proxy is None:
        print(f"Goal: at concurrency 64, Orchestra's p95 overhead within 2x LiteLLM Proxy's ({no_proxy}): NOT MET")
        met.append(False)
    else:
        o95, p95 = overhead(orchestra, blocks, 95), overhead(proxy, blocks, 95)
        within = o95 <= 2 * p95
        print(
            f"Goal: at concurrency 64, Orchestra's p95 overhead within 2x LiteLLM Proxy's ({o95:+.1f} vs 2 x "
            f"{p95:+.1f} ms): {verdict(within)}"
        )
        met.append(within)
    return all(met)
