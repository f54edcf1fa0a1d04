"""Parallel subtasks: one planned task of 8 independent subtasks, 0.5 s each, on 8 worker slots.

    .venv/bin/python bench/parallel.py [--subtasks 8] [--delay 0.5] [--repeat 3]

The scripted OpenAI-compatible server plans the task into independent subtasks and answers
each after `--delay` seconds. A real Celery worker (threads pool, queues orchestrator and
workers) runs the runs: first with 1 slot (the serial time, measured: the same subtasks one
after another), then with one slot per subtask. A slot is one call at a time: the worker
gets `concurrency` = slots and ORCHESTRA_ATTEMPT_THREADS = slots (a step sends its ready
attempts as one batch, whose calls run on that many threads). Per run, from the attempt rows:
- phase: first subtask attempt queued (created_at) to the last one finished (finished_at);
- run: run created to run finished (planner call and final steps included).
Each setting runs one warm-up run, then `--repeat` measured runs; medians are compared.
Goals: parallel phase under 0.75 s, speedup (serial phase / parallel phase) >= 5.3x.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    BenchEnvironment,
    bench_environment,
    bench_user,
    code_version,
    load_average,
    verdict,
    wait_runs,
)
from providers.scripted_openai import Reply, ScriptedOpenAI, last_user  # noqa: E402

PHASE_GOAL_S = 0.75
SPEEDUP_GOAL = 5.3


@dataclass(frozen=True)
class RunTiming:
    phase_s: float  # first subtask attempt queued -> last finished
    run_s: float  # run created -> run finished
    start_spread_s: float  # first -> last subtask attempt started
    attempts_s: float  # sum of the subtask attempts' own durations (started -> finished)
    wait_s: float  # median of queued (created_at) -> started, over the subtask attempts
    status: str


def planner_script(subtasks: int, delay_s: float) -> Any:
    plan = {"subtasks": [{"id": f"q{i}", "text": f"Question {i}: what is {i}+{i}?"} for i in range(subtasks)]}

    def script(body: dict[str, Any]) -> Reply:
        first = body["messages"][0]
        if first["role"] == "system" and "You split a task" in first["content"]:
            return Reply(content=json.dumps(plan))
        question = last_user(body)
        if question.startswith("Question "):
            number = int(question.split(":")[0].split()[1])
            return Reply(content=str(2 * number), delay_s=delay_s, prompt_tokens=12, completion_tokens=1)
        return Reply(status=400, content=f"unscripted prompt: {question[:80]}")

    return script


def make_pool(base_url: str) -> int:
    from studio.models import Primitive
    from studio.services.pools import admissibility_create, endpoint_create, pool_create

    pool = pool_create(name=f"bench-parallel-{os.getpid()}-{time.time_ns()}")
    endpoint = endpoint_create(
        pool_id=pool.pk, name="scripted", model="openai/scripted", api_base=base_url, api_key="sk-bench",
        input_cost_per_mtok=1, output_cost_per_mtok=1,
    )  # fmt: skip
    for name in ("direct", "plan"):
        admissibility_create(endpoint_id=endpoint.pk, primitive_id=Primitive.objects.get_or_create(name=name)[0].pk)
    return pool.pk


def one_run(pool_id: int, subtasks: int) -> RunTiming:
    from studio.models import Attempt, Run
    from studio.services.runs import run_create
    from studio.services.tasks import task_create

    owner = bench_user()
    task = task_create(
        owner=owner, text=f"Answer {subtasks} independent questions.", decomposable=True, benchmark="bench"
    )
    run = run_create(owner=owner, task_id=task.pk, pool_id=pool_id)
    wait_runs([run.pk], timeout_s=120)
    run = Run.objects.get(pk=run.pk)
    attempts = list(Attempt.objects.filter(node__run=run, node__kind="subtask"))
    if run.finished_at is None or len(attempts) != subtasks or any(a.finished_at is None for a in attempts):
        raise RuntimeError(f"run {run.pk} ended {run.status}: {run.end_reason}")
    first_queued = min(a.created_at for a in attempts)
    last_finished = max(a.finished_at for a in attempts if a.finished_at is not None)
    starts = [a.started_at for a in attempts if a.started_at is not None]
    return RunTiming(
        phase_s=(last_finished - first_queued).total_seconds(),
        run_s=(run.finished_at - run.created_at).total_seconds(),
        start_spread_s=(max(starts) - min(starts)).total_seconds(),
        attempts_s=sum(
            (a.finished_at - a.started_at).total_seconds() for a in attempts if a.finished_at and a.started_at
        ),
        wait_s=statistics.median(
            (a.started_at - a.created_at).total_seconds() for a in attempts if a.started_at is not None
        ),
        status=run.status,
    )


def measure(bench: BenchEnvironment, pool_id: int, slots: int, subtasks: int, repeat: int) -> list[RunTiming]:
    worker = bench.start_worker(
        f"bench-parallel{slots}-{os.getpid()}",
        pool="threads",
        concurrency=slots,
        env={"ORCHESTRA_ATTEMPT_THREADS": str(slots)},
    )
    try:
        bench.wait_workers_ready([worker])
        one_run(pool_id, subtasks)  # warm-up: first connections, first litellm call
        timings = []
        for number in range(1, repeat + 1):
            timing = one_run(pool_id, subtasks)
            timings.append(timing)
            print(
                f"  {slots:>5} {number:>4} {timing.phase_s:>9.3f} {timing.run_s:>7.3f} "
                f"{timing.start_spread_s:>9.3f} {timing.wait_s:>7.3f} {timing.attempts_s:>8.3f}  {timing.status}  "
                f"({load_average()})",
                flush=True,
            )
        return timings
    finally:
        worker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subtasks", type=int, default=8, help="independent subtasks (at most 12)")
    parser.add_argument("--delay", type=float, default=0.5, help="scripted reply delay per subtask, seconds")
    parser.add_argument("--repeat", type=int, default=3, help="measured runs per setting")
    args = parser.parse_args()

    print(
        f"Parallel bench: {args.subtasks} independent subtasks, scripted reply delay {args.delay} s each; "
        f"a Celery worker (threads pool) with 1 slot (serial, measured), then {args.subtasks} slots.\n"
        "phase = first subtask attempt queued -> last finished (attempt rows); run = created -> finished; "
        "spread = first -> last subtask attempt started; wait = median queued -> started; "
        "sum = the attempts' own durations added up.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    with bench_environment() as bench, ScriptedOpenAI(planner_script(args.subtasks, args.delay)) as server:
        pool_id = make_pool(server.base_url)
        print(f"  {'slots':>5} {'run':>4} {'phase s':>9} {'run s':>7} {'spread s':>9} {'wait s':>7} {'sum s':>8}")
        serial = measure(bench, pool_id, 1, args.subtasks, args.repeat)
        parallel = measure(bench, pool_id, args.subtasks, args.subtasks, args.repeat)

    serial_phase = statistics.median(t.phase_s for t in serial)
    parallel_phase = statistics.median(t.phase_s for t in parallel)
    speedup = serial_phase / parallel_phase
    print(
        f"serial (1 slot, measured), median of {args.repeat}: phase {serial_phase:.3f} s, "
        f"run {statistics.median(t.run_s for t in serial):.3f} s; "
        f"sum of attempt durations {statistics.median(t.attempts_s for t in serial):.3f} s\n"
        f"parallel ({args.subtasks} slots), median of {args.repeat}: phase {parallel_phase:.3f} s, "
        f"run {statistics.median(t.run_s for t in parallel):.3f} s\n"
        f"speedup (serial phase / parallel phase): {speedup:.2f}x; "
        f"vs. the parallel run's own attempt sum: "
        f"{statistics.median(t.attempts_s for t in parallel) / parallel_phase:.2f}x\n"
        f"End: {load_average()}\n"
        f"Goal: parallel phase < {PHASE_GOAL_S} s: {verdict(parallel_phase < PHASE_GOAL_S)}\n"
        f"Goal: speedup >= {SPEEDUP_GOAL}x: {verdict(speedup >= SPEEDUP_GOAL)}"
    )


if __name__ == "__main__":
    main()
