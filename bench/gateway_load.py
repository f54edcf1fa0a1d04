"""The gateway bench's routes and load (bench/gateway.py): each route is an `Ask`, a prompt in
and the answer out (the direct `litellm.acompletion`, or the official `openai` async client
for LiteLLM Proxy and Orchestra, no retries); `measure` sends the same prompts by every route,
the routes taking turns, and keeps each route's latencies and errors per concurrency in a
`Block`. An error is a request that raised or did not answer "42".
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench.gateway_upstream import ANSWER, MODEL, UPSTREAM_KEY
from bench.measure import load_average, percentile

WARM_UP = 16
TIMEOUT_S = 120.0


Ask = Callable[[str], Awaitable[str]]


def direct_route(base_url: str) -> Ask:
    import litellm

    litellm.suppress_debug_info = True

    async def ask(prompt: str) -> str:
        reply = await litellm.acompletion(
            model=f"openai/{MODEL}", api_base=base_url, api_key=UPSTREAM_KEY, num_retries=0, timeout=TIMEOUT_S,
            messages=[{"role": "user", "content": prompt}],
        )  # fmt: skip
        return str(reply.choices[0].message.content)

    return ask


def openai_route(base_url: str, key: str, model: str, extra_body: dict[str, Any] | None = None) -> Ask:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=TIMEOUT_S)

    async def ask(prompt: str) -> str:
        reply = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], extra_body=extra_body
        )
        return str(reply.choices[0].message.content)

    return ask


@dataclass
class Block:
    """One route at one concurrency."""

    route: str
    concurrency: int
    requests: int
    latencies: list[float] = field(default_factory=list)  # seconds, of the requests answered right
    errors: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0

    def ms(self, q: float) -> float:
        return 1000 * percentile(self.latencies, q)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


async def load(ask: Ask, prompts: list[str], concurrency: int, block: Block) -> Block:
    """`prompts` through `ask`, `concurrency` at a time, added to `block`."""
    pending = iter(prompts)

    async def caller() -> None:
        for prompt in pending:  # one iterator shared by the callers: each prompt is sent once
            started = time.perf_counter()
            try:
                answer = await ask(prompt)
            except Exception as exc:  # noqa: BLE001 - an error is a figure of the bench, not its end
                block.errors[type(exc).__name__] += 1
                continue
            if answer.strip() == ANSWER:
                block.latencies.append(time.perf_counter() - started)
            else:
                block.errors["wrong answer"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    block.wall_s += time.perf_counter() - started
    return block


async def measure(
    routes: dict[str, Ask], concurrencies: list[int], requests: int, rounds: int, after: Callable[[str], None]
) -> list[Block]:
    """A warm-up of each route, then at each concurrency the routes take turns, `rounds` times,
    each turn a `rounds`-th of the prompts (at least 2 x the concurrency): a machine that is
    slower for a few seconds slows every route alike. `after(route)` runs (in a thread) after
    each turn."""
    for name, ask in routes.items():
        await load(ask, [f"[warm-up {i}] What is 6 x 7?" for i in range(WARM_UP)], 4, Block(name, 4, WARM_UP))
        await asyncio.to_thread(after, name)
    blocks = []
    for concurrency in concurrencies:
        count = max(requests, 4 * concurrency)
        turns = max(1, min(rounds, count // (2 * concurrency)))
        prompts = [f"[c{concurrency} #{i}] What is 6 x 7?" for i in range(count)]
        shares = [prompts[turn::turns] for turn in range(turns)]
        by_route = {name: Block(name, concurrency, count) for name in routes}
        for share in shares:
            for name, ask in routes.items():
                await load(ask, share, concurrency, by_route[name])
                await asyncio.to_thread(after, name)
        for name, block in by_route.items():
            blocks.append(block)
            print(
                f"  c={concurrency:<3} {name:14} {len(block.latencies)}/{count} ok in {block.wall_s:.1f} s "
                f"({turns} turns; {load_average()})",
                flush=True,
            )
    return blocks
