"""Interference on a real model: a part answered alone against within a composite that one
call answers whole, on the local model (issue 48).

    .venv/bin/python bench/interference.py [--composites 300] [--primitives cot,direct] [--samples 2]
        [--seed 0] [--threads 2] [--url URL --model NAME] [--json OUT]

REAL: every answer is the model's own; nothing is recorded beforehand or made up.

1. The server: llama.cpp's OpenAI-compatible server on the shipped SmolLM2-135M-Instruct
   GGUF (providers/local_model.py), `--threads` threads, on a free loopback port, with `up`'s
   context (2048). `--url` (with `--model`, the name it serves) measures a server that
   already runs instead: any OpenAI-compatible one.
2. Items: the shipped items of `data/outcomes/smollm2.jsonl.gz` (60 seeded arithmetic items
   of four levels, "Calculate 7 + 2.", scored by the `number` checker).
3. Composites (`orchestrator.composite.interference.draw`, `--seed`): distinct items, a third
   each of 2, 3 and 4 to 6 parts, worded as the studio words a composite solved whole
   ("Answer each part:\n\nPart 1: ...", `composite.build.composite_text`).
4. Alone: each item with each primitive, `--samples` calls. Whole: each composite with each
   primitive, one call. Every call goes through the workers' own primitive and litellm's
   OpenAI-compatible provider (`providers.primitives.run_primitive`), with the server's
   default sampling, as the studio calls the model.
5. Scoring: an alone answer as the primitive reads it (`EXTRACTORS`), by the checker. A whole
   answer is cut at its "Part n" markers (`split_parts`); each piece is read by the
   primitive's extractor and scored; a part with no piece scores 0 ("found" is the share
   that had one). That rule is this bench's: the live engine scores a real model's whole
   answer as one.

Printed per primitive and size bucket: composites, parts, found, accuracy alone (each item's
mean over its samples) and within, within - alone and within / alone with 95% bootstrap
intervals over composites. `--json` writes them, with the setting, as the interference
model of this pool (the factor a part keeps of its accuracy, per primitive and size).
Progress goes to stderr. No goal: this is a measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import code_version, load_average  # noqa: E402
from orchestrator.composite.build import composite_text  # noqa: E402
from orchestrator.composite.interference import BUCKETS, Within, draw, split_parts, summarize  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ITEMS = ROOT / "data" / "outcomes" / "smollm2.jsonl.gz"
NAME = "smollm2"


def shipped_items() -> list[dict[str, str]]:
    """The shipped items, once each, in file order: item_id, prompt, gold, benchmark."""
    seen: dict[str, dict[str, str]] = {}
    with gzip.open(ITEMS, "rt") as lines:
        for line in lines:
            row = json.loads(line)
            seen.setdefault(row["item_id"], {key: row[key] for key in ("item_id", "prompt", "gold", "benchmark")})
    return list(seen.values())


@contextlib.contextmanager
def served(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(base URL, model name): `--url`'s, or the shipped model's under a server started here."""
    if args.url:
        yield args.url, args.model
        return
    from bench.processes import free_port
    from providers import local_server as support
    from providers.local_model import Server, shipped_file

    spec = Server(file=shipped_file(), name=NAME, host="127.0.0.1", port=free_port(), threads=args.threads,
                  context=2048)  # fmt: skip
    process = support.start(spec)
    try:
        yield spec.url, spec.name
    finally:
        support.stop(process)


def answer(url: str, model: str, primitive: str, prompt: str) -> tuple[str | None, str]:
    """(the primitive's answer or None where it failed, its whole output) of one real call."""
    from providers.llm import EndpointConfig, LLMClient
    from providers.primitives import PrimitiveInput, run_primitive

    llm = LLMClient(EndpointConfig(model=f"openai/{model}", api_base=url, api_key="no-key", timeout_s=300.0))
    envelope = run_primitive(primitive, llm, PrimitiveInput(prompt=prompt))
    if envelope.status != "ok":
        raise RuntimeError(f"{primitive} failed: {envelope.error_kind}: {envelope.error_message}")
    return envelope.answer, envelope.output or ""


def score(benchmark: str, text: str | None, gold: str) -> float:
    from providers.checkers import check

    return float(check(benchmark, text, gold).score) if text else 0.0


def measure_primitive(
    url: str,
    model: str,
    primitive: str,
    items: list[dict[str, str]],
    composites: list[tuple[int, ...]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One primitive: every item alone `--samples` times, then every composite whole."""
    from providers.primitives.base import EXTRACTORS

    extract = EXTRACTORS[primitive]
    started = time.perf_counter()
    jobs = [i for i in range(len(items)) for _ in range(args.samples)]

    def one_alone(i: int) -> float:
        text, _ = answer(url, model, primitive, items[i]["prompt"])
        return score(items[i]["benchmark"], text, items[i]["gold"])

    def one_whole(parts: tuple[int, ...]) -> Within:
        _, output = answer(url, model, primitive, composite_text([items[i]["prompt"] for i in parts]))
        pieces = split_parts(output, len(parts))
        scores = tuple(
            score(items[i]["benchmark"], extract(piece) if piece else None, items[i]["gold"])
            for i, piece in zip(parts, pieces, strict=True)
        )
        return Within(items=parts, scores=scores, found=tuple(piece is not None for piece in pieces))

    def progress(stage: str, n: int, total: int) -> None:
        if n % 20 == 0 or n == total:
            print(
                f"{primitive}: {stage} {n}/{total} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True
            )

    alone: dict[int, list[float]] = {}
    within: list[Within] = []
    with ThreadPoolExecutor(args.concurrency) as pool:
        for n, (i, got) in enumerate(zip(jobs, pool.map(one_alone, jobs), strict=True), 1):
            alone.setdefault(i, []).append(got)
            progress("alone", n, len(jobs))
        for n, row in enumerate(pool.map(one_whole, composites), 1):
            within.append(row)
            progress("whole", n, len(composites))
    return {
        "buckets": summarize(within, alone, seed=args.seed),
        "alone_calls": len(jobs),
        "whole_calls": len(composites),
        "seconds": time.perf_counter() - started,
    }


def measure(args: argparse.Namespace, url: str, model: str) -> dict[str, Any]:
    items = shipped_items()
    composites = draw(len(items), args.composites, seed=args.seed)
    return {
        primitive: measure_primitive(url, model, primitive, items, composites, args) for primitive in args.primitives
    }


def print_table(results: dict[str, Any]) -> None:
    def show(interval: Any) -> str:
        return f"{interval.value:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"

    def share(interval: Any) -> str:
        return f"{interval.value:.3f} [{interval.low:.3f}, {interval.high:.3f}]"

    print(f"\n{'primitive':16} {'parts':>5} {'composites':>10} {'parts':>6} {'found':>6} {'alone':>22} "
          f"{'within':>22} {'within - alone':>25} {'within / alone':>22}")  # fmt: skip
    for primitive, result in results.items():
        for bucket, row in result["buckets"].items():
            print(f"{primitive:16} {bucket:>5} {row.composites:>10} {row.parts:>6} {row.found:>6.3f} "
                  f"{share(row.alone):>22} {share(row.within):>22} {show(row.difference):>25} "
                  f"{share(row.ratio):>22}")  # fmt: skip
        print(f"{primitive}: {result['alone_calls']} alone calls and {result['whole_calls']} whole calls in "
              f"{result['seconds']:.0f} s")  # fmt: skip


def as_json(results: dict[str, Any], args: argparse.Namespace, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "items": str(ITEMS.relative_to(ROOT)),
        "setting": {"composites": args.composites, "samples": args.samples, "seed": args.seed,
                    "buckets": {name: list(bounds) for name, bounds in BUCKETS.items()}},
        "primitives": {
            primitive: {**{k: v for k, v in result.items() if k != "buckets"},
                        "buckets": {bucket: row.as_dict() for bucket, row in result["buckets"].items()}}
            for primitive, result in results.items()
        },
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--composites", type=int, default=300, help="composites per primitive (default 300)")
    parser.add_argument("--primitives", default="cot,direct", help="comma-separated (default cot,direct)")
    parser.add_argument("--samples", type=int, default=2, help="alone calls per item and primitive (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="the server's CPU threads (default 2)")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight (default 1)")
    parser.add_argument("--url", help="an OpenAI-compatible server that already runs, instead of starting one")
    parser.add_argument("--model", default=NAME, help=f"the model name --url serves (default {NAME})")
    parser.add_argument("--json", type=Path, help="write the measured interference here")
    args = parser.parse_args()
    args.primitives = [p.strip() for p in args.primitives.split(",") if p.strip()]
    from providers.primitives.base import EXTRACTORS

    unknown = [p for p in args.primitives if p not in EXTRACTORS]
    if unknown or not args.primitives:
        parser.error(f"unknown primitive(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(EXTRACTORS)}")
    if args.composites < 1 or args.samples < 1 or args.threads < 1 or args.concurrency < 1:
        parser.error("--composites, --samples, --threads and --concurrency take positive counts")
    print(f"Interference bench: {args.composites} composites x {', '.join(args.primitives)}, {args.samples} alone "
          f"samples per item; start {load_average()}; {code_version()}", flush=True)  # fmt: skip
    with served(args) as (url, model):
        results = measure(args, url, model)
    print_table(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(as_json(results, args, model), indent=1))
        print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
