"""Parity: the learned policy live, through /v1, against the evaluation of the same checkpoint.

    .venv/bin/python bench/parity.py [--items 300] [--presets best,balanced,cheap,balanced+cascade]
        [--seed 0] [--checkpoint POLICY.pt] [--probe K]

1. The stack (bench/harness.py): embedded PostgreSQL and Redis (or those of DATABASE_URL /
   REDIS_URL), a Celery worker (prefork, 2 processes) and uvicorn. RouterBench's recordings
   are the replay pool `bench-replay`.
2. A learned policy trained (`train_policy`) on RouterBench's upstream *train* split only,
   unless `--checkpoint` names one; it becomes the studio's default policy checkpoint. (The
   demo checkpoint of `make up` is trained on every item, test items included.)
3. `--items` test items, drawn with `--seed` among those whose prompt no other RouterBench
   item shares (a /v1 request is a text: replay finds its recordings by that text), each
   sent to `/v1/chat/completions` with the official `openai` client, model
   `orchestra/learned`, once per preset. `<preset>+cascade` is the preset with the agreement
   cascade: `policy_config {"cascade": true}` live (the gate the checkpoint carries for that
   λ), the evaluation's cascade point at that λ offline (its gate fit on the same train items).
4. The same checkpoint as `orchestrator.evaluate`'s learned method (`--checkpoint`) routes
   the same items at the same λ; both are scored on the recordings.

`--probe K`: the unseen pool, calibrated live. The policy is trained on LLMRouter only
(`train_policy --unseen`; RouterBench's models are new to it), K RouterBench items are the
probe (`probe_split`, as `orchestrator.evaluate --train llmrouter.jsonl.gz --outcomes
routerbench.jsonl.gz --probe K` draws them) and the test items come from the rest. Live, a
calibrating collection records the probe items × every pair of the replay pool through the
provider path, and its source becomes the pool's calibration (docs/collect.md); offline, the
evaluation's learned method calibrates on the same probe. The pool's calibration source is
given back afterwards.

Printed per preset, side by side: items whose pairs called, in order, are the same live as
offline; macro accuracy; $/query; calls per query.
Goals: >= 99% of items the same; macro within 0.5 points; $/query within 2%.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    REPLAY_POOL,
    bench_environment,
    bench_user,
    code_version,
    load_average,
    replay_pool,
    verdict,
)
from bench.paths import DATA_DIR, ROOT  # noqa: E402
from bench.processes import free_port, start_server  # noqa: E402

if TYPE_CHECKING:
    from orchestrator.routing.table import OutcomeTable

OUTCOMES = ROOT / "data" / "outcomes"
AGREEMENT_GOAL = 0.99
MACRO_GOAL = 0.005
COST_GOAL = 0.02


def test_items(table: OutcomeTable, *, count: int, seed: int) -> np.ndarray:
    """Rows of the test table whose prompt is unique among all of RouterBench's items."""
    from orchestrator.routing.table import load_table

    everything = load_table([OUTCOMES / "routerbench.jsonl.gz"], prices=OUTCOMES / "prices.json")
    shared = Counter(everything.prompts)
    unique = np.flatnonzero([shared[prompt] == 1 for prompt in table.prompts])
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(unique, size=min(count, len(unique)), replace=False))


def train_checkpoint(train: OutcomeTable, seed: int, *, unseen: bool = False) -> Path:
    from orchestrator.learning.method import LearnedConfig
    from orchestrator.train_policy import train_table

    name = f"parity-unseen-llmrouter-seed{seed}.pt" if unseen else f"parity-train-split-seed{seed}.pt"
    out = DATA_DIR / "checkpoints" / name
    started = time.monotonic()
    print(f"training the policy on {train.n_items} train items ({load_average()})", flush=True)
    source = "llmrouter.jsonl.gz" if unseen else "routerbench.jsonl.gz (train split)"
    train_table(
        train, out=out, seed=seed, config=LearnedConfig.from_mapping({"threads": 2}),
        prices=OUTCOMES / "prices.json", show_progress=False, outcomes=[source], unseen=unseen,
    )  # fmt: skip
    print(f"  trained in {time.monotonic() - started:.0f} s -> {out}", flush=True)
    return out


def restore_default(before: int | None) -> None:
    """The bench's data folder is shared with the other benches: give back the default policy
    it found (a learned default made every later throughput run decide with the learned policy)."""
    from studio.models import Checkpoint, CheckpointKind

    Checkpoint.objects.filter(kind=CheckpointKind.POLICY).update(is_default=False)
    if before is not None:
        Checkpoint.objects.filter(pk=before).update(is_default=True)


def make_default(path: Path) -> int | None:
    """Make the checkpoint at `path` the default policy; return the default it replaced."""
    from studio.models import Checkpoint, CheckpointKind

    found = Checkpoint.objects.filter(kind=CheckpointKind.POLICY, is_default=True).first()

    relative = path.resolve().relative_to(DATA_DIR) if path.resolve().is_relative_to(DATA_DIR) else None
    if relative is None:
        target = DATA_DIR / "checkpoints" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
        relative = target.relative_to(DATA_DIR)
    Checkpoint.objects.filter(kind=CheckpointKind.POLICY).update(is_default=False)
    Checkpoint.objects.update_or_create(
        kind=CheckpointKind.POLICY, path=str(relative), defaults={"name": path.stem, "is_default": True}
    )
    return found.pk if found is not None else None


def calibrate_live(probe: OutcomeTable, pool_id: int) -> str:
    """The live side of the probe: the probe items as tasks, a calibrating collection of them ×
    every pair of the replay pool, run here through the provider path; its source becomes the
    pool's calibration. Returns the source."""
    from studio.models import Admissibility, ModelPool
    from studio.services.collections import collection_create
    from studio.services.tasks import task_create
    from workers.collection import run_collection

    owner = bench_user()
    tasks = [
        task_create(owner=owner, text=probe.prompts[i], benchmark=probe.benchmarks[i], domain=probe.domains[i],
                    metadata={"item_id": probe.item_ids[i]}).pk
        for i in range(probe.n_items)
    ]  # fmt: skip
    rows = Admissibility.objects.filter(endpoint__pool_id=pool_id, allowed=True).select_related("primitive")
    pairs = [(row.endpoint_id, row.primitive.name) for row in rows]
    collection = collection_create(owner=owner, pool_id=pool_id, task_ids=tasks, pairs=pairs, budget_usd=1000,
                                   max_concurrency=8, calibrates=True, enqueue=False, name="parity probe")  # fmt: skip
    status = run_collection(collection.pk)
    source = ModelPool.objects.get(pk=pool_id).calibration_source
    print(
        f"  probe collected live: {len(tasks)} items x {len(pairs)} pairs, {status}; calibration {source}", flush=True
    )
    return source


def live(url: str, token: str, prompts: list[str], preset: str) -> list[int]:
    """Run ids of one /v1 chat per prompt, one at a time."""
    from openai import OpenAI

    preset, cascade = preset.removesuffix("+cascade"), preset.endswith("+cascade")
    body = {"pool": REPLAY_POOL, "preset": preset} | ({"policy_config": {"cascade": True}} if cascade else {})

    client = OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=120)
    runs = []
    for prompt in prompts:
        raw = client.chat.completions.with_raw_response.create(
            model="orchestra/learned", messages=[{"role": "user", "content": prompt}],
            extra_body=body,
        )  # fmt: skip
        runs.append(int(raw.headers["x-orchestra-run-id"]))
    return runs


def live_routes(
    run_ids: list[int], pairs: list[tuple[str, str]]
) -> tuple[list[tuple[int, ...]], list[int], list[float]]:
    """Per run: the table columns of the pairs called in order, the accepted one, the run's cost."""
    from studio.models import Attempt, Run, RunEvent

    called, accepted, costs = [], [], []
    for run_id in run_ids:
        attempts = list(
            Attempt.objects.filter(node__run_id=run_id, node__key="root").exclude(primitive__name="plan")
            .select_related("endpoint", "primitive").order_by("number")
        )  # fmt: skip
        columns = [pairs.index((a.endpoint.model.removeprefix("replay/"), a.primitive.name)) for a in attempts]
        done = RunEvent.objects.filter(run_id=run_id, type="node.succeeded", payload__key="root").first()
        number = int(done.payload.get("attempt", len(attempts))) if done else len(attempts)
        called.append(tuple(columns))
        accepted.append(columns[number - 1] if columns else -1)
        costs.append(float(Run.objects.get(pk=run_id).cost_usd))
    return called, accepted, costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--presets", default="best,balanced,cheap,balanced+cascade")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, help="a trained policy checkpoint (default: train one)")
    parser.add_argument(
        "--probe", type=int, default=0,
        help="the unseen pool: a policy trained on LLMRouter (--unseen), RouterBench's pool calibrated live on K "
        "probe items by a calibrating collection, against orchestrator.evaluate --train llmrouter --probe K",
    )  # fmt: skip
    args = parser.parse_args()
    presets = [name.strip() for name in args.presets.split(",") if name.strip()]
    known = ("best", "balanced", "cheap")
    for preset in presets:
        if preset.removesuffix("+cascade") not in known:
            parser.error(f"unknown preset {preset!r}: one of {', '.join(known)}, each with or without +cascade")
    print(
        f"Parity bench: {args.items} RouterBench test items through /v1 at {', '.join(presets)}, against the "
        f"evaluation of the same checkpoint.\nStart: {load_average()}; {code_version()}",
        flush=True,
    )
    with bench_environment() as bench:
        from orchestrator.learning.method import LearnedMethod
        from orchestrator.policies import COST_PRESETS
        from orchestrator.routing import metrics
        from orchestrator.routing.methods import CASCADE_OFFSET
        from orchestrator.routing.table import load_table, probe_split, split_table
        from studio.services.tokens import token_create

        pool_id = replay_pool()
        table = load_table([OUTCOMES / "routerbench.jsonl.gz"], prices=OUTCOMES / "prices.json")
        probe = None
        if args.probe:  # evaluate's unseen-pool setting: its probe items, the rest for testing
            train = load_table([OUTCOMES / "llmrouter.jsonl.gz"], prices=OUTCOMES / "prices.json")
            probe, test = probe_split(table, k=args.probe, seed=args.seed)
        else:
            train, test = split_table(table, seed=0)
        test = test.rows(test_items(test, count=args.items, seed=args.seed))
        checkpoint = args.checkpoint or train_checkpoint(train, args.seed, unseen=probe is not None)
        before = make_default(checkpoint)
        method = LearnedMethod(checkpoint=checkpoint)
        method.fit(train, seed=args.seed, probe=probe)
        source_before = None
        if probe is not None:
            from studio.models import ModelPool

            source_before = ModelPool.objects.get(pk=pool_id).calibration_source
            calibrate_live(probe, pool_id)
        worker = bench.start_worker("parity", pool="prefork", concurrency=2)
        bench.wait_workers_ready([worker])
        port = free_port()
        server = start_server(bench, port)
        token = token_create(user=bench_user(), name=f"parity-{time.time_ns()}")[1]
        try:
            rows = []
            for preset in presets:
                lam = COST_PRESETS[preset.removesuffix("+cascade")]
                started = time.monotonic()
                run_ids = live(f"http://127.0.0.1:{port}", token, test.prompts, preset)
                called, accepted, costs = live_routes(run_ids, test.pairs)
                live_s = time.monotonic() - started
                offline = method.route(test, knob=lam + (CASCADE_OFFSET if preset.endswith("+cascade") else 0))
                scored = metrics.score_routes(test, offline)
                live_score = np.array([test.score[i, j] if j >= 0 else 0.0 for i, j in enumerate(accepted)])
                same = sum(c == tuple(o) for c, o in zip(called, offline.executed, strict=True))
                rows.append(
                    {
                        "preset": preset, "lam": lam, "same": same, "n": test.n_items, "live_s": live_s,
                        "macro_live": metrics.macro_accuracy(live_score, test.benchmarks),
                        "macro_offline": metrics.macro_accuracy(scored.score, test.benchmarks),
                        "cost_live": float(np.mean(costs)), "cost_offline": metrics.cost_per_query(scored.cost),
                        "calls_live": float(np.mean([len(c) for c in called])),
                        "calls_offline": float(scored.calls.mean()),
                        "final_same": sum(a == f for a, f in zip(accepted, offline.final, strict=True)),
                    }
                )  # fmt: skip
                print(f"  {preset}: {test.n_items} runs in {live_s:.0f} s ({load_average()})", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=15)
            restore_default(before)
            if source_before is not None:
                from studio.models import ModelPool

                ModelPool.objects.filter(pk=pool_id).update(calibration_source=source_before)
    report(rows)


def report(rows: list[dict[str, float | str | int]]) -> None:
    print(f"\n{'preset':16} {'λ':>5}  {'same pairs':>12}  {'same answer':>12}  {'macro':>8} {'offline':>8}  ", end="")
    print(f"{'$/query':>10} {'offline':>10}  {'calls':>6} {'offline':>8}")
    goals = []
    for row in rows:
        n = int(row["n"])
        share = int(row["same"]) / n
        macro = f"{row['macro_live']:8.4f} {row['macro_offline']:8.4f}"
        cost = f"{row['cost_live']:10.3e} {row['cost_offline']:10.3e}"
        calls = f"{row['calls_live']:6.2f} {row['calls_offline']:8.2f}"
        same = f"{row['same']:5}/{n} {share:5.1%}  {row['final_same']:5}/{n}"
        print(f"{row['preset']:16} {row['lam']:5.2f}  {same}   {macro}  {cost}  {calls}")
        cost_gap = abs(float(row["cost_live"]) - float(row["cost_offline"])) / max(float(row["cost_offline"]), 1e-12)
        goals.append((row["preset"], share, abs(float(row["macro_live"]) - float(row["macro_offline"])), cost_gap))
    print("(live first, offline second: `macro`, `$/query` and `calls` per query)")
    print(f"End: {load_average()}")
    for preset, share, gap, cost_gap in goals:
        met = verdict(share >= AGREEMENT_GOAL)
        print(f"Goal: {preset}: >= {AGREEMENT_GOAL:.0%} of items call the same pairs ({share:.1%}): {met}")
        points = f"{gap * 100:.2f}"
        print(f"Goal: {preset}: macro within {MACRO_GOAL * 100:.1f} points ({points}): {verdict(gap <= MACRO_GOAL)}")
        print(f"Goal: {preset}: $/query within {COST_GOAL:.0%} ({cost_gap:.2%}): {verdict(cost_gap <= COST_GOAL)}")


if __name__ == "__main__":
    main()
