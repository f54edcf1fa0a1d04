"""Per-call time of the replay provider, next to litellm's own overhead, in one run.

    python bench/replay_overhead.py [--calls 2000] [--outcomes data/outcomes/routerbench.jsonl.gz]

Three lines, each a litellm.completion call:
- replay:  `replay/<model>` served from recorded outcomes (lookup by item id);
- null:    a custom provider that returns a constant (litellm's overhead on this path);
- http:    `openai/scripted` against the scripted OpenAI-compatible server on 127.0.0.1;
- lookup:  the replay store's lookup alone, without litellm.
The replay provider's own cost is replay minus null. Goal: under 1 ms at p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

from orchestrator.outcomes import read_outcomes  # noqa: E402
from providers import replay  # noqa: E402
from providers.scripted_openai import Reply, ScriptedOpenAI  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class Null(CustomLLM):
    """Answers with a constant, shaped like a replay answer (model, usage, cost), so that
    litellm does the same work around it."""

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        response = kwargs["model_response"]
        response.choices[0].message.content = "constant"
        response.choices[0].finish_reason = "stop"
        response.model = f"nullprovider/{model}"
        response.usage = litellm.Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        response._hidden_params["response_cost"] = 0.0
        response._hidden_params["replay"] = {"score": 1.0}
        return response


def timed(call: Callable[[int], Any], n: int) -> list[float]:
    for i in range(min(50, n)):  # warm up
        call(i)
    times = []
    for i in range(n):
        started = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - started) * 1000)
    return times


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--outcomes", type=Path, default=ROOT / "data/outcomes/routerbench.jsonl.gz")
    args = parser.parse_args()

    records = list(read_outcomes(args.outcomes))
    store = replay.MemoryStore(records)
    replay.install(store)
    litellm.custom_provider_map.append({"provider": "nullprovider", "custom_handler": Null()})
    messages = [{"role": "user", "content": "What is 2+2?"}]

    def replay_call(i: int) -> Any:
        record = records[i % len(records)]
        return litellm.completion(
            model=f"replay/{record.model}",
            messages=[{"role": "user", "content": record.prompt}],
            metadata={"primitive": record.primitive, "item_id": record.item_id},
        )

    def null_call(i: int) -> Any:
        return litellm.completion(model="nullprovider/x", messages=messages, metadata={"primitive": "direct"})

    # Interleave the two lines in rounds, so drift in machine load hits both alike.
    results: dict[str, list[float]] = {"replay": [], "null": []}
    for _ in range(10):
        results["null"] += timed(null_call, args.calls // 10)
        results["replay"] += timed(replay_call, args.calls // 10)
    with ScriptedOpenAI(lambda body: Reply(content="4")) as server:

        def http_call(i: int) -> Any:
            return litellm.completion(
                model="openai/scripted",
                api_base=server.base_url,
                api_key="sk-bench",
                messages=messages,
                max_retries=0,
            )

        results["http"] = timed(http_call, max(200, args.calls // 4))

    def lookup_only(i: int) -> Any:
        record = records[i % len(records)]
        return store.find(record.model, record.primitive, item_id=record.item_id, prompt=record.prompt)

    results["lookup"] = timed(lookup_only, args.calls)

    print(f"records loaded: {len(store):,} from {args.outcomes.name}; calls per line: {args.calls}")
    print(f"{'line':<8}{'p50 ms':>10}{'p95 ms':>10}")
    for name, values in results.items():
        print(f"{name:<8}{percentile(values, 50):>10.3f}{percentile(values, 95):>10.3f}")
    added = percentile(results["replay"], 50) - percentile(results["null"], 50)
    print(
        f"replay adds {added:+.3f} ms at p50 beyond litellm's own overhead (goal: under 1 ms); "
        f"the store lookup alone takes {percentile(results['lookup'], 50) * 1000:.1f} µs"
    )


if __name__ == "__main__":
    main()
