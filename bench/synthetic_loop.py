"""The user's own loop, end to end on the real stack, over the SYNTHETIC pool: import the pool,
make tasks, collect and calibrate, train, serve through /v1, and compare with every single
model of the pool and with the oracle on held-out items.

    .venv/bin/python bench/synthetic_loop.py [--items 60] [--test 100] [--presets best,balanced,cheap]
        [--budget 1.0] [--seed 0] [--outcomes routerbench.jsonl.gz] [--benchmarks gsm8k,mbpp,hotpotqa]

SYNTHETIC: every answer comes from `workers.synthetic_pool` (four made-up models with known
per-domain accuracies and prices, docs/collect.md); the figures are figures of that
construction, not of any real model.

1. The stack (bench/harness.py): embedded PostgreSQL and Redis (or those of DATABASE_URL /
   REDIS_URL), a Celery worker (prefork, 2 processes, queues orchestrator and training),
   uvicorn, and the synthetic pool on 127.0.0.1 (its default four models, direct only).
2. The pool: `manage.py import_litellm_config` of the pool's LiteLLM config
   (`python -m workers.synthetic_pool --print-litellm-config`): 4 endpoints at their prices,
   the key read from SYNTHETIC_POOL_KEY, 4 (model, direct) pairs.
3. Tasks: `POST /api/tasks/from-benchmark`, `--items` ÷ 3 seeded items of each benchmark.
4. Collect and calibrate: `POST /api/collections` (the tasks × the 4 pairs, `--budget`,
   `calibrates: true`), followed on `GET /api/collections/{id}` until it ends; it becomes
   the pool's calibration.
5. Train: `POST /api/training/jobs` (a policy on `--outcomes` plus the collection), followed
   until it ends.
6. Serve: `--test` held-out items of each benchmark (the same seeded order, after the
   collected ones: never collected, never trained on), each sent to `/v1/chat/completions`
   with the official `openai` client (model `orchestra/learned`, the pool, the new
   checkpoint, each preset), 4 at a time. Each answer is scored by its item's checker here;
   its cost is the run's (`orchestra.cost_usd`: every model call the run made).
7. The single models and the oracle: a second collection, made after serving, of the
   held-out items × the 4 pairs (not calibrating, never trained on) through the same
   provider path. Each pair's macro accuracy and $/query on the held-out items, and the
   oracle (an item is right when any pair got it right, at the cheapest such pair's cost).
   Check: each live run's accepted pair scored the same there as live.

Goal (issue 26): at the balanced preset (/v1's default), the learned policy's macro accuracy
is higher and its $/query lower than the best single model's on the held-out items.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    forget_pool,
    load_average,
    verdict,
)
from bench.parity import restore_default  # noqa: E402
from bench.processes import free_port, start_server  # noqa: E402

POOL = "synthetic-loop"
TERMINAL = {"succeeded", "failed", "cancelled", "stopped"}


class Studio:
    """The studio's HTTP API with a bearer token."""

    def __init__(self, url: str, token: str) -> None:
        import httpx

        self.url, self.token = url, token
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.http.post(path, json=body)
        if reply.status_code >= 300:
            raise SystemExit(f"POST {path}: {reply.status_code} {reply.text}")
        return dict(reply.json())

    def get(self, path: str) -> Any:
        reply = self.http.get(path)
        reply.raise_for_status()
        return reply.json()

    def follow(self, path: str, what: str, timeout_s: float) -> dict[str, Any]:
        """Poll `path` until its status ends; print its progress now and then."""
        deadline, shown = time.monotonic() + timeout_s, 0.0
        while True:
            row = self.get(path)
            if row["status"] in TERMINAL:
                return row
            if time.monotonic() - shown > 15:
                cells = row.get("cells")
                done = f"{cells['recorded'] + cells['failed']}/{cells['total']} cells" if cells else ""
                progress = done or f"{row.get('progress', 0):.0%} {row.get('message', '')}"
                print(f"  {what}: {row['status']} {progress} ({load_average()})", flush=True)
                shown = time.monotonic()
            if time.monotonic() > deadline:
                raise SystemExit(f"{what} did not end within {timeout_s:.0f} s: {row}")
            time.sleep(1)


def import_pool(base_url: str) -> int:
    import yaml
    from django.core.management import call_command

    from studio.models import ModelPool
    from workers.synthetic_config import DEFAULT_CONFIG, KEY_ENV, litellm_config

    forget_pool(POOL)
    from bench.paths import DATA_DIR

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / "synthetic-loop-litellm.yaml"
    path.write_text(yaml.safe_dump(litellm_config(DEFAULT_CONFIG, base_url)))
    os.environ[KEY_ENV] = "synthetic"
    out = io.StringIO()
    call_command("import_litellm_config", str(path), "--pool", POOL, "--description", "SYNTHETIC", stdout=out)
    print("  " + out.getvalue().strip().replace("\n", "\n  "), flush=True)
    return int(ModelPool.objects.get(name=POOL).pk)


def serve(url: str, token: str, specs: list[Any], body: dict[str, Any]) -> list[tuple[int, str, float]]:
    """(run id, answer, run cost) of one /v1 chat per held-out item, 4 at a time."""
    from openai import OpenAI

    client = OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=300)

    def one(spec: Any) -> tuple[int, str, float]:
        reply = client.chat.completions.create(
            model="orchestra/learned", messages=[{"role": "user", "content": spec.text}], extra_body=body
        )
        extra = reply.model_extra or {}
        return int(extra["orchestra"]["run_id"]), reply.choices[0].message.content or "", extra["orchestra"]["cost_usd"]

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, specs))


def default_checkpoint() -> int | None:
    from studio.models import Checkpoint, CheckpointKind

    return Checkpoint.objects.filter(kind=CheckpointKind.POLICY, is_default=True).values_list("pk", flat=True).first()


def check_checkpoint(run_ids: list[int], checkpoint_id: int) -> None:
    """Every run loaded the checkpoint just trained (not the studio's default one)."""
    from studio.models import Run

    other = Run.objects.filter(pk__in=run_ids).exclude(checkpoint_id=checkpoint_id).count()
    if other:
        raise SystemExit(f"{other} of {len(run_ids)} runs did not load checkpoint {checkpoint_id}")


def score(spec: Any, answer: str) -> float:
    from providers.checkers import check

    return check(spec.checker, answer, spec.gold, item={"prompt": spec.text, **spec.metadata}).score


def accepted_pairs(run_ids: list[int]) -> list[str | None]:
    """The model of each run's accepted root attempt (None: no answer)."""
    from studio.models import Attempt, RunEvent

    models: list[str | None] = []
    for run_id in run_ids:
        done = RunEvent.objects.filter(run_id=run_id, type="node.succeeded", payload__key="root").first()
        attempts = list(Attempt.objects.filter(node__run_id=run_id, node__key="root").order_by("number"))
        if done is None or not attempts:
            models.append(None)
            continue
        number = int(done.payload.get("attempt", len(attempts)))
        models.append(next((a.endpoint.model for a in attempts if a.number == number), None))
    return models


def collected(source: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(item id, model) -> (score, cost) of a collection's rows."""
    from studio.models import RecordedOutcome

    rows = RecordedOutcome.objects.filter(source=source).values_list("item_id", "model", "score", "cost_usd")
    return {(item, model): (float(s), float(c or 0)) for item, model, s, c in rows}


def macro(scores: np.ndarray, groups: list[str]) -> float:
    names = sorted(set(groups))
    return float(np.mean([scores[[g == name for g in groups]].mean() for name in names]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=60, help="items collected (split evenly over the benchmarks)")
    parser.add_argument("--test", type=int, default=100, help="held-out items per benchmark, served through /v1")
    parser.add_argument("--benchmarks", default="gsm8k,mbpp,hotpotqa")
    parser.add_argument("--presets", default="best,balanced,cheap")
    parser.add_argument("--budget", type=float, default=1.0, help="the collection's budget in dollars")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outcomes", default="routerbench.jsonl.gz", help="shipped files trained on beside it")
    args = parser.parse_args()
    benchmarks = [name.strip() for name in args.benchmarks.split(",") if name.strip()]
    presets = [name.strip() for name in args.presets.split(",") if name.strip()]
    per = args.items // len(benchmarks)
    print(
        f"Synthetic loop (SYNTHETIC pool): {per} items x {len(benchmarks)} benchmarks collected x 4 pairs, "
        f"{args.test} held-out items per benchmark served through /v1 at {', '.join(presets)}.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    from orchestrator.benchmark_tasks import benchmark_tasks
    from workers.synthetic_answers import ItemIndex
    from workers.synthetic_config import DEFAULT_CONFIG
    from workers.synthetic_pool import SyntheticPool

    specs = {name: benchmark_tasks(name, per + args.test, seed=args.seed) for name in benchmarks}
    held_out = [spec for name in benchmarks for spec in specs[name][per:]]
    index = ItemIndex(spec for name in benchmarks for spec in specs[name])
    started = time.monotonic()
    with bench_environment() as bench, SyntheticPool(DEFAULT_CONFIG, index=index) as synthetic:
        from studio.services.tokens import token_create

        worker = bench.start_worker("loop", pool="prefork", concurrency=2, queues="orchestrator,workers,training")
        bench.wait_workers_ready([worker])
        port = free_port()
        server = start_server(bench, port)
        url = f"http://127.0.0.1:{port}"
        studio = Studio(url, token_create(user=bench_user(), name=f"loop-{time.time_ns()}")[1])
        before = default_checkpoint()
        try:
            print(f"pool ({synthetic.base_url}):", flush=True)
            pool_id = import_pool(synthetic.base_url)
            endpoints = studio.get(f"/api/pools/{pool_id}/endpoints?limit=100")["items"]
            pairs = [{"endpoint_id": e["id"], "primitive": "direct"} for e in endpoints]

            task_ids: list[int] = []
            for name in benchmarks:
                made = studio.post("/api/tasks/from-benchmark", {"benchmark": name, "n": per, "seed": args.seed})
                task_ids += made["task_ids"]
            print(f"tasks: {len(task_ids)} from {', '.join(benchmarks)}", flush=True)

            t = time.monotonic()
            body = {"pool_id": pool_id, "task_ids": task_ids, "pairs": pairs, "budget_usd": args.budget,
                    "max_concurrency": 4, "calibrates": True, "name": "synthetic loop: calibrate"}  # fmt: skip
            calibration = studio.follow(f"/api/collections/{studio.post('/api/collections', body)['id']}",
                                        "collection", 600)  # fmt: skip
            collect_s = time.monotonic() - t
            print(
                f"collected: {calibration['status']}, {calibration['cells']['recorded']} cells recorded, "
                f"{calibration['cells']['failed']} failed, ${calibration['spent_usd']:.4f} of ${args.budget:g}, "
                f"{collect_s:.0f} s; pool calibration: {studio.get(f'/api/pools/{pool_id}')['calibration_source']}",
                flush=True,
            )

            t = time.monotonic()
            config = {"seed": args.seed, "outcomes": [args.outcomes], "collections": [calibration["id"]]}
            job = studio.post("/api/training/jobs", {"kind": "policy", "config": config})
            job = studio.follow(f"/api/training/jobs/{job['id']}", "training", 3600)
            train_s = time.monotonic() - t
            if job["status"] != "succeeded":
                raise SystemExit(f"training {job['status']}: {job['message']}")
            print(f"trained: checkpoint {job['checkpoint_id']} in {train_s:.0f} s", flush=True)

            live = {}
            for preset in presets:
                t = time.monotonic()
                body = {"pool": POOL, "preset": preset, "checkpoint_id": job["checkpoint_id"]}
                served = serve(url, studio.token, held_out, body)
                live[preset] = served
                check_checkpoint([run for run, _, _ in served], job["checkpoint_id"])
                print(f"served {preset}: {len(served)} chats in {time.monotonic() - t:.0f} s ({load_average()})")

            made_ids: list[int] = []
            for name in benchmarks:
                made = studio.post("/api/tasks/from-benchmark",
                                   {"benchmark": name, "n": per + args.test, "seed": args.seed})  # fmt: skip
                made_ids += made["task_ids"][per:]
            body = {"pool_id": pool_id, "task_ids": made_ids, "pairs": pairs, "budget_usd": 100.0,
                    "max_concurrency": 4, "name": "synthetic loop: held-out truth"}  # fmt: skip
            truth_row = studio.follow(f"/api/collections/{studio.post('/api/collections', body)['id']}",
                                      "held-out collection", 1200)  # fmt: skip
            truth = collected(truth_row["source"])
            models = [e["model"] for e in endpoints]
            rows = report(held_out, live, truth, models)
        finally:
            server.terminate()
            server.wait(timeout=15)
            # The data folder is shared with the other benches: a first policy checkpoint becomes
            # the default, and would make their `orchestra` runs learned ones.
            restore_default(before)
    print(f"\nIn all {time.monotonic() - started:.0f} s. End: {load_average()}")
    return rows


def report(
    held_out: list[Any],
    live: dict[str, list[tuple[int, str, float]]],
    truth: dict[tuple[str, str], tuple[float, float]],
    models: list[str],
) -> int:
    groups = [spec.benchmark for spec in held_out]
    print(f"\nHeld-out: {len(held_out)} items ({', '.join(f'{g} {groups.count(g)}' for g in sorted(set(groups)))})")
    print(f"{'':34} {'macro':>7} {'$/query':>10}   per benchmark")
    single = {}
    for model in models:
        s = np.array([truth[(spec.item_id, model)][0] for spec in held_out])
        c = np.array([truth[(spec.item_id, model)][1] for spec in held_out])
        single[model] = (macro(s, groups), float(c.mean()))
        per = " ".join(f"{g} {s[[x == g for x in groups]].mean():.3f}" for g in sorted(set(groups)))
        print(f"{model + ' alone':34} {single[model][0]:7.4f} {single[model][1]:10.3e}   {per}")
    best_model = max(models, key=lambda m: (single[m][0], -single[m][1]))
    oracle_s, oracle_c = [], []
    for spec in held_out:
        right = [truth[(spec.item_id, m)][1] for m in models if truth[(spec.item_id, m)][0] >= 1]
        oracle_s.append(1.0 if right else 0.0)
        oracle_c.append(min(right) if right else min(truth[(spec.item_id, m)][1] for m in models))
    print(
        f"{'oracle (any pair right, cheapest)':34} {macro(np.array(oracle_s), groups):7.4f} {np.mean(oracle_c):10.3e}"
    )
    met = True
    for preset, served in live.items():
        s = np.array([score(spec, answer) for spec, (_, answer, _) in zip(held_out, served, strict=True)])
        c = np.array([cost for _, _, cost in served])
        accepted = accepted_pairs([run for run, _, _ in served])
        same = sum(
            model is not None and truth[(spec.item_id, model)][0] == live_score
            for spec, model, live_score in zip(held_out, accepted, s, strict=True)
        )
        per = " ".join(f"{g} {s[[x == g for x in groups]].mean():.3f}" for g in sorted(set(groups)))
        print(f"{'learned via /v1, ' + preset:34} {macro(s, groups):7.4f} {c.mean():10.3e}   {per}")
        print(f"{'':34} accepted pair scored the same in the held-out collection: {same}/{len(held_out)}")
        if preset == "balanced":
            better, cheaper = macro(s, groups) > single[best_model][0], c.mean() < single[best_model][1]
            met = better and cheaper
            print(
                f"Goal: balanced beats the best single model ({best_model}: {single[best_model][0]:.4f} at "
                f"{single[best_model][1]:.3e}) in macro accuracy ({macro(s, groups):.4f}) and $/query "
                f"({c.mean():.3e}): {verdict(met)}"
            )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
