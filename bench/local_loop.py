"""The user's loop on a real model: the local model (SmolLM2-135M-Instruct under llama.cpp's
server, providers/local_model.py) with each of its primitives, collected, calibrated, trained on
and served through /v1, then compared on held-out items with every single pair and the oracle.

    .venv/bin/python bench/local_loop.py [--train 60] [--test 200] [--primitives direct,cot]
        [--presets best,balanced,cheap] [--threads 2] [--seed 0] [--outcomes routerbench.jsonl.gz]
        [--ship data/outcomes/smollm2.jsonl.gz]

REAL: every answer here is the real model's; nothing is recorded beforehand or made up.

1. The server: `python -m llama_cpp.server` on the shipped GGUF, `--threads` CPU threads, on a
   free loopback port. The stack (bench/harness.py): PostgreSQL, Redis, a Celery worker
   (prefork x 2, queues orchestrator, workers and training) and uvicorn.
2. The pool: the local endpoint as `manage.py bootstrap` makes it in the demo pool
   (`local_endpoint_ensure`: `openai/smollm2` at `ORCHESTRA_LOCAL_MODEL_PRICE`, its primitives);
   the pairs measured are `--primitives` of it.
3. Items: arithmetic of graded difficulty, generated from `--seed` (level 1: a + b, one digit;
   2: a + b, two digits; 3: a x b, up to 12 x 9; 4: a + b x c), an even share of each level,
   scored by the `number` checker (benchmark `arithmetic`), asked as "Calculate 7 + 2.": of
   three phrasings tried on 12 one-digit sums ("7 + 2 =", "Calculate 7 + 2.", "What is 7 + 2?
   Give only the number."), it got 1, 4 and 1 right. Every text is distinct; the first
   `--train` are collected and trained on, the next `--test` held out. The script checks that
   no held-out text is among the trained ones.
4. Collect and calibrate: `POST /api/collections` (train items x pairs, calibrating).
5. Train: `POST /api/training/jobs` (a policy on `--outcomes`, if any, plus the collection).
6. Serve: each held-out item through `/v1/chat/completions` (model `orchestra/learned`, the new
   checkpoint, each of `--presets`), 4 at a time; each answer scored by the checker here; its
   cost is the run's, its latency the client's.
7. Singles and the oracle: a second collection, after serving, of the held-out items x the
   pairs (not calibrating, never trained on). Each pair's accuracy (macro over the levels),
   $/query and mean latency; the oracle takes, per item, the cheapest pair that got it right.

With `--ship FILE`, it stops after step 4 and writes the collection's outcomes to FILE as the
canonical outcome source `smollm2` (item ids `arithmetic.s<seed>.<i>`, split `train`): the
shipped `data/outcomes/smollm2.jsonl.gz`, from which the demo policy learns the local model
(data/outcomes/PROVENANCE.md). Its items are this bench's train items at the same seed, so
they are never among its held-out ones; the script checks that by text too.

Printed: the table of step 7 and the learned policy at each preset; whether the learned
policy at `balanced` beats the best single pair is reported, not required (the model is tiny
and its primitives differ little). The pool's default policy and default checkpoint are left
as they were.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import bench_environment, bench_user, forget_pool  # noqa: E402
from bench.measure import code_version, load_average, verdict  # noqa: E402
from bench.parity import restore_default  # noqa: E402
from bench.processes import free_port, start_server  # noqa: E402
from bench.synthetic_loop import Studio, check_checkpoint, default_checkpoint, macro  # noqa: E402

POOL = "local-loop"
BENCHMARK = "arithmetic"
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "outcomes" / "smollm2.jsonl.gz"
SHIPPED_SOURCE = "smollm2"


def arithmetic(n: int, seed: int) -> list[tuple[str, str, str]]:
    """`n` distinct (text, gold, level) items, levels in turn."""
    rng = random.Random(seed)  # noqa: S311 - items, not secrets
    makers = {
        "1 add": lambda: (a := rng.randint(1, 9), b := rng.randint(1, 9), f"{a} + {b}", a + b)[2:],
        "2 add": lambda: (a := rng.randint(10, 99), b := rng.randint(10, 99), f"{a} + {b}", a + b)[2:],
        "3 mul": lambda: (a := rng.randint(2, 12), b := rng.randint(2, 9), f"{a} * {b}", a * b)[2:],
        "4 mixed": lambda: (
            a := rng.randint(1, 20),
            b := rng.randint(2, 9),
            c := rng.randint(2, 9),
            f"{a} + {b} * {c}",
            a + b * c,
        )[3:],
    }
    items: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    levels = list(makers)
    for _ in range(n * 50):
        if len(items) == n:
            break
        level = levels[len(items) % len(levels)]
        expression, value = makers[level]()
        text = f"Calculate {expression}."  # the phrasing it answers best of those tried (docstring)
        if text not in seen:
            seen.add(text)
            items.append((text, str(value), level))
    if len(items) < n:
        raise SystemExit(f"only {len(items)} distinct items can be made; ask for fewer")
    return items


def make_tasks(studio: Studio, items: list[tuple[str, str, str]]) -> list[int]:
    ids = []
    for text, gold, level in items:
        body = {"text": text, "gold_answer": gold, "checker": BENCHMARK, "benchmark": BENCHMARK, "domain": "math",
                "metadata": {"level": level}}  # fmt: skip
        ids.append(int(studio.post("/api/tasks", body)["id"]))
    return ids


def serve(
    url: str, token: str, items: list[tuple[str, str, str]], body: dict[str, Any]
) -> list[tuple[int, str, float, float]]:
    """(run id, answer, cost, latency) of one /v1 chat per item, 4 at a time."""
    from openai import OpenAI

    client = OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=600)

    def one(item: tuple[str, str, str]) -> tuple[int, str, float, float]:
        began = time.perf_counter()
        reply = client.chat.completions.create(
            model="orchestra/learned", messages=[{"role": "user", "content": item[0]}], extra_body=body
        )
        extra = reply.model_extra or {}
        return (int(extra["orchestra"]["run_id"]), reply.choices[0].message.content or "",
                float(extra["orchestra"]["cost_usd"]), time.perf_counter() - began)  # fmt: skip

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, items))


def cells(source: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(item id, primitive) -> (score, cost, latency) of a collection's rows."""
    from studio.models import RecordedOutcome

    rows = RecordedOutcome.objects.filter(source=source).values_list("item_id", "primitive", "score", "cost_usd",
                                                                    "latency_s")  # fmt: skip
    return {(item, prim): (float(s), float(c or 0), float(lat or 0)) for item, prim, s, c, lat in rows}


def shipped_texts() -> set[str]:
    """The prompts of the shipped outcomes of the local model (none before they are made)."""
    from orchestrator.outcomes import read_outcomes

    return {record.prompt for record in read_outcomes(SHIPPED)} if SHIPPED.exists() else set()


def ship(path: Path, source: str, task_ids: list[int], seed: int) -> int:
    """The collection's outcomes written as the shipped source: item `i` of the seed's items is
    `arithmetic.s<seed>.<i>`, every record in split `train`. Returns how many were written."""
    from dataclasses import replace

    from orchestrator.outcomes import write_outcomes
    from studio.services.outcomes import outcome_records

    ids = {f"task-{pk}": f"{BENCHMARK}.s{seed}.{i:03d}" for i, pk in enumerate(task_ids)}
    records, _ = outcome_records(sources=[source])
    renamed = [replace(r, source=SHIPPED_SOURCE, item_id=ids[r.item_id], split="train") for r in records]
    return write_outcomes(path, sorted(renamed, key=lambda r: (r.item_id, r.model, r.primitive)))


def score(answer: str, gold: str) -> float:
    from providers.checkers import check

    return check(BENCHMARK, answer, gold).score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=60, help="items collected and trained on")
    parser.add_argument("--test", type=int, default=200, help="held-out items, served through /v1")
    parser.add_argument("--primitives", default="direct,cot", help="the local model's pairs measured")
    parser.add_argument("--presets", default="best,balanced,cheap")
    parser.add_argument("--threads", type=int, default=2, help="the server's CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--outcomes", default="routerbench.jsonl.gz", help="shipped files also trained on ('' for none)"
    )
    parser.add_argument("--ship", type=Path, help="collect the train items only, and write their outcomes here")
    args = parser.parse_args()
    primitives = [p.strip() for p in args.primitives.split(",") if p.strip()]
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    if args.ship is not None and not args.ship.name.endswith(".jsonl.gz"):
        parser.error(f"--ship takes a .jsonl.gz file, not {args.ship.name!r}")
    items = arithmetic(args.train + args.test, args.seed)
    train, test = items[: args.train], items[args.train :]
    shipped = shipped_texts() if args.ship is None else set()
    held = [item for item in test if item[0] not in shipped]  # another seed's items may be among them
    if len(held) < len(test):
        print(f"{len(test) - len(held)} held-out items left out: their texts are in {SHIPPED.name}", flush=True)
        test = held
    overlap = {t for t, _, _ in train} & {t for t, _, _ in test}
    if overlap:
        raise SystemExit(f"held-out texts among the trained ones: {sorted(overlap)[:3]}")
    print(f"Local loop (REAL: SmolLM2-135M-Instruct, llama.cpp, {args.threads} threads): {len(train)} items collected "
          f"x {len(primitives)} pairs ({', '.join(primitives)}), {len(test)} held out (no text shared), served "
          f"through /v1 at {', '.join(presets)}.\nStart: {load_average()}; {code_version()}", flush=True)  # fmt: skip
    from providers import local_server as support
    from providers.local_model import Server, shipped_file

    spec = Server(file=shipped_file(), name="smollm2", host="127.0.0.1", port=free_port(), threads=args.threads,
                  context=2048)  # fmt: skip
    process = support.start(spec)
    started = time.monotonic()
    try:
        with bench_environment() as bench:
            from django.conf import settings

            from studio.services.bootstrap import LocalModel, local_endpoint_ensure
            from studio.services.tokens import token_create

            worker = bench.start_worker("local-loop", pool="prefork", concurrency=2,
                                        queues="orchestrator,workers,training")  # fmt: skip
            bench.wait_workers_ready([worker])
            port = free_port()
            server = start_server(bench, port)
            url = f"http://127.0.0.1:{port}"
            studio = Studio(url, token_create(user=bench_user(), name=f"local-loop-{time.time_ns()}")[1])
            before = default_checkpoint()
            try:
                forget_pool(POOL)
                price = settings.ORCHESTRA_LOCAL_MODEL_PRICE
                local = LocalModel(url=spec.url, name=spec.name, price_per_mtok=price, context=spec.context)
                endpoint, _ = local_endpoint_ensure(pool_name=POOL, local=local)
                pool_id = endpoint.pool_id
                pairs = [{"endpoint_id": endpoint.pk, "primitive": p} for p in primitives]
                train_ids = make_tasks(studio, train)
                t = time.monotonic()
                body = {"pool_id": pool_id, "task_ids": train_ids, "pairs": pairs, "budget_usd": 1.0,
                        "max_concurrency": 2, "calibrates": True, "name": "local loop: calibrate"}  # fmt: skip
                calibration = studio.follow(f"/api/collections/{studio.post('/api/collections', body)['id']}",
                                            "collection", 7200)  # fmt: skip
                print(f"collected: {calibration['status']}, {calibration['cells']['recorded']} cells recorded, "
                      f"{calibration['cells']['failed']} failed, ${calibration['spent_usd']:.6f}, "
                      f"{time.monotonic() - t:.0f} s", flush=True)  # fmt: skip
                if args.ship is not None:
                    written = ship(args.ship, calibration["source"], train_ids, args.seed)
                    print(f"wrote {written} outcomes to {args.ship}", flush=True)
                    return 0
                t = time.monotonic()
                config: dict[str, Any] = {"seed": args.seed, "collections": [calibration["id"]],
                                          "outcomes": [args.outcomes] if args.outcomes else []}  # fmt: skip
                job = studio.post("/api/training/jobs", {"kind": "policy", "config": config})
                job = studio.follow(f"/api/training/jobs/{job['id']}", "training", 3600)
                if job["status"] != "succeeded":
                    raise SystemExit(f"training {job['status']}: {job['message']}")
                print(f"trained: checkpoint {job['checkpoint_id']} in {time.monotonic() - t:.0f} s", flush=True)
                live = {}
                for preset in presets:
                    t = time.monotonic()
                    body = {"pool": POOL, "preset": preset, "checkpoint_id": job["checkpoint_id"]}
                    live[preset] = serve(url, studio.token, test, body)
                    check_checkpoint([run for run, *_ in live[preset]], job["checkpoint_id"])
                    print(f"served {preset}: {len(test)} chats in {time.monotonic() - t:.0f} s ({load_average()})",
                          flush=True)  # fmt: skip
                test_ids = make_tasks(studio, test)
                body = {"pool_id": pool_id, "task_ids": test_ids, "pairs": pairs, "budget_usd": 10.0,
                        "max_concurrency": 2, "name": "local loop: held-out truth"}  # fmt: skip
                truth_row = studio.follow(f"/api/collections/{studio.post('/api/collections', body)['id']}",
                                          "held-out collection", 7200)  # fmt: skip
                truth = cells(truth_row["source"])
                met = report(test, test_ids, live, truth, primitives)
            finally:
                server.terminate()
                server.wait(timeout=15)
                restore_default(before)
    finally:
        support.stop(process)
    print(f"\nIn all {time.monotonic() - started:.0f} s. End: {load_average()}")
    return 0 if met else 1


def report(
    test: list[tuple[str, str, str]],
    test_ids: list[int],
    live: dict[str, list[tuple[int, str, float, float]]],
    truth: dict[tuple[str, str], tuple[float, float, float]],
    primitives: list[str],
) -> bool:
    levels = [level for _, _, level in test]
    keys = [f"task-{pk}" for pk in test_ids]
    missing = [(k, p) for k in keys for p in primitives if (k, p) not in truth]
    print(f"\nHeld-out: {len(test)} items ({', '.join(f'level {lv} {levels.count(lv)}' for lv in sorted(set(levels)))})"
          f"; cells missing from the held-out collection (failed calls, scored 0): {len(missing)}")  # fmt: skip

    def cell(key: str, prim: str) -> tuple[float, float, float]:
        return truth.get((key, prim), (0.0, 0.0, 0.0))

    print(f"\n| {'':34} | macro acc | $/query | latency s | per level |\n|---|---|---|---|---|")
    single = {}
    for prim in primitives:
        s = np.array([cell(k, prim)[0] for k in keys])
        c = np.array([cell(k, prim)[1] for k in keys])
        lat = np.array([cell(k, prim)[2] for k in keys])
        single[prim] = (macro(s, levels), float(c.mean()))
        per = " ".join(f"L{lv.split()[0]} {s[[x == lv for x in levels]].mean():.3f}" for lv in sorted(set(levels)))
        name = f"smollm2 / {prim} alone"
        print(f"| {name:34} | {single[prim][0]:.4f} | {c.mean():.3e} | {lat.mean():.2f} | {per} |")
    oracle_s, oracle_c = [], []
    for k in keys:
        right = [cell(k, p)[1] for p in primitives if cell(k, p)[0] >= 1]
        oracle_s.append(1.0 if right else 0.0)
        oracle_c.append(min(right) if right else min(cell(k, p)[1] for p in primitives))
    print(f"| {'oracle (cheapest right pair)':34} | {macro(np.array(oracle_s), levels):.4f} | "
          f"{np.mean(oracle_c):.3e} | – | |")  # fmt: skip
    best = max(primitives, key=lambda p: (single[p][0], -single[p][1]))
    met = False
    for preset, served in live.items():
        s = np.array([score(answer, gold) for (_, gold, _), (_, answer, _, _) in zip(test, served, strict=True)])
        c = np.array([cost for _, _, cost, _ in served])
        waited = [latency for *_, latency in served]
        per = " ".join(f"L{lv.split()[0]} {s[[x == lv for x in levels]].mean():.3f}" for lv in sorted(set(levels)))
        print(f"| {'learned via /v1, ' + preset:34} | {macro(s, levels):.4f} | {c.mean():.3e} | "
              f"{statistics.mean(waited):.2f} | {per} |")  # fmt: skip
        if preset == "balanced":
            met = macro(s, levels) > single[best][0] and c.mean() <= single[best][1]
            balanced = (macro(s, levels), c.mean())
    if "balanced" in live:
        print(f"\nBalanced vs the best single pair (smollm2 / {best}: {single[best][0]:.4f} at {single[best][1]:.3e}): "
              f"{balanced[0]:.4f} at {balanced[1]:.3e}; more accurate and no dearer: {verdict(met)} "
              "(reported, not required)")  # fmt: skip
    return True


if __name__ == "__main__":
    raise SystemExit(main())
