"""Throughput: subtasks per second through Celery on the replay pool.

    .venv/bin/python bench/throughput.py [--runs 40] [--items 16]
        [--configs prefork:2,prefork:4,threads:4,threads:8] [--profile prefork:4] [--latency off]

Recorded items from data/outcomes/routerbench.jsonl.gz are loaded with `manage.py
import_outcomes` into the pool `bench-replay` (skipped once loaded). For each worker
setting (`pool:concurrency`, `xN` for N such workers), the bench starts the workers on
queues orchestrator and workers, creates `--runs` composite tasks of `--items` recorded
items each (task_create_composite, not timed), then creates all their runs at once and
waits for them. Throughput = subtask attempts finished ok / (last run finished - first run
created). Replay latency is `--latency` (default off: the bench measures the studio's own
overhead). CPU seconds of the workers, PostgreSQL, Redis and this process are read from
/proc over the same window (2 cores give at most 2 CPU-seconds per second).

`--profile SETTING` repeats one setting with per-task probes in the workers (see
bench/celery_app.py, BENCH_PROFILE) and prints where a subtask's time goes.
Goal: >= 200 subtasks/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    REPLAY_SOURCE,
    BenchEnvironment,
    CpuMeter,
    bench_environment,
    bench_user,
    code_version,
    composite_tasks,
    load_average,
    process_tree,
    replay_pool,
    verdict,
    wait_runs,
)
from bench.paths import DATA_DIR  # noqa: E402

GOAL_PER_S = 200.0


@dataclass(frozen=True)
class Setting:
    pool: str
    concurrency: int
    workers: int = 1

    @classmethod
    def parse(cls, text: str) -> Setting:
        pool, _, rest = text.partition(":")
        concurrency, _, count = rest.partition("x")
        return cls(pool, int(concurrency), int(count or 1))

    def __str__(self) -> str:
        return f"{self.pool}:{self.concurrency}" + (f"x{self.workers}" if self.workers > 1 else "")


def postgres_counters() -> dict[str, float]:
    """Commits, rolled-back transactions and sessions opened so far, from pg_stat_database."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT xact_commit, xact_rollback, sessions FROM pg_stat_database WHERE datname = current_database()"
        )
        commits, rollbacks, sessions = cursor.fetchone()
    return {"commits": commits, "rollbacks": rollbacks, "sessions": sessions}


def postgres_setting(name: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        return str(cursor.fetchone()[0])


@dataclass(frozen=True)
class Result:
    setting: Setting
    ok_subtasks: int
    runs_succeeded: int
    runs: int
    wall_s: float
    phase_s: float  # first subtask attempt queued -> last finished
    cpu: dict[str, float]
    postgres: dict[str, float]  # pg_stat_database counters over the window
    backlog: int  # messages still queued when the last run ended
    load: str

    @property
    def per_s(self) -> float:
        return self.ok_subtasks / self.wall_s


def one_setting(
    bench: BenchEnvironment, setting: Setting, pool_id: int, args: argparse.Namespace, env: dict[str, str]
) -> Result:
    from django.db.models import Max, Min

    from studio.models import Attempt, Run
    from studio.services.runs import run_create

    workers = [
        bench.start_worker(f"bench-tp{n}-{os.getpid()}", pool=setting.pool, concurrency=setting.concurrency, env=env)
        for n in range(setting.workers)
    ]
    try:
        bench.wait_workers_ready(workers)
        task_ids = composite_tasks(runs=args.runs, items=args.items)
        owner = bench_user()
        meter = CpuMeter(
            {
                "workers": lambda: [pid for worker in workers for pid in worker.pids()],
                "postgres": process_tree(bench.postgres_pid),
                "redis": process_tree(bench.redis_pid),
                "bench": lambda: [os.getpid()],  # its children (workers, Redis) are counted above
            }
        )
        counters = postgres_counters()
        run_ids = [run_create(owner=owner, task_id=task_id, pool_id=pool_id).pk for task_id in task_ids]
        statuses = wait_runs(run_ids, timeout_s=args.timeout, poll_s=0.2)
        cpu = meter.read()
        backlog = bench.queued_messages()
        # pg_stat_database lags by up to PGSTAT's flush interval (1 s); wait it out.
        time.sleep(1.5)
        postgres = {name: value - counters[name] for name, value in postgres_counters().items()}
        load = load_average()
    finally:
        for worker in workers:
            worker.stop()
        bench.purge_queues()  # leftover run steps of ended runs must not run in the next setting
    runs = Run.objects.filter(pk__in=run_ids).aggregate(first=Min("created_at"), last=Max("finished_at"))
    attempts = Attempt.objects.filter(node__run_id__in=run_ids, node__kind="subtask")
    ok = attempts.filter(status="ok")
    span = ok.aggregate(first=Min("created_at"), last=Max("finished_at"))
    if runs["last"] is None or span["last"] is None:
        raise RuntimeError(f"no run finished with {setting}: {statuses}")
    return Result(
        setting=setting,
        ok_subtasks=ok.count(),
        runs_succeeded=sum(1 for status in statuses.values() if status == "succeeded"),
        runs=len(run_ids),
        wall_s=(runs["last"] - runs["first"]).total_seconds(),
        phase_s=(span["last"] - span["first"]).total_seconds(),
        cpu=cpu,
        postgres=postgres,
        backlog=backlog,
        load=load,
    )


def print_result(result: Result) -> None:
    cpu = result.cpu
    per_subtask = {name: 1000 * seconds / max(1, result.ok_subtasks) for name, seconds in cpu.items()}
    print(
        f"  {result.setting!s:<14} {result.runs_succeeded:>3}/{result.runs:<3} {result.ok_subtasks:>6} "
        f"{result.wall_s:>7.2f} {result.per_s:>8.1f} {result.ok_subtasks / result.phase_s:>8.1f}  "
        + " ".join(f"{name} {per_subtask[name]:.1f}" for name in ("workers", "postgres", "redis", "bench"))
        + f"  (CPU {sum(cpu.values()) / result.wall_s:.2f} cores busy; {result.load})\n"
        + " " * 18
        + "Postgres per subtask: "
        + ", ".join(f"{name} {value / max(1, result.ok_subtasks):.2f}" for name, value in result.postgres.items())
        + f"; messages still queued when the last run ended: {result.backlog}",
        flush=True,
    )


PROFILE_FIELDS = (
    ("wall", "task wall"),
    ("_load", "engine: _load (rows to the run's state)"),
    ("_policy", "engine: _policy (make the run's policy)"),
    ("admissible_pairs", "engine: admissible_pairs (the pool's pairs)"),
    ("step", "core.step (the policy decides; pure)"),
    ("_write", "engine: _write (state to rows, events)"),
    ("_write_nodes", "  _write_nodes (new nodes, bulk)"),
    ("_write_attempts", "  _write_attempts (new attempts, bulk)"),
    ("attempts_start", "attempts_start (claim a batch)"),
    ("provider", "execute() (primitive + litellm + replay), this thread"),
    ("attempts_finish", "attempts_finish (record, bill a group)"),
    ("run_events_append", "run_events_append (3 statements, in the tx)"),
    ("sql", "SQL, all statements"),
    ("sql_run_lock", "  run row lock (run_step SELECT .. FOR UPDATE)"),
    ("sql_attempt_lock", "  attempt row lock"),
    ("sql_event_seq", "  event append: seq bump + read"),
    ("sql_event_insert", "  event append: INSERT"),
    ("sql_run_update", "  run totals UPDATE"),
    ("sql_other", "  other statements"),
    ("notify", "channel-layer group_send after commit"),
    ("publish", "Celery publish (delay)"),
    ("connect", "new database connections"),
)


def print_profile(path: Path, result: Result) -> None:
    ok_subtasks = result.ok_subtasks
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in path.read_text().splitlines():
        record = json.loads(line)
        task = totals[record.pop("task").split(".")[-1]]
        task["wall_n"] += 1
        for key, value in record.items():
            if key != "pid":
                task[key] += value
    print(
        f"Profile: per finished subtask ({ok_subtasks} ok), summed over each task kind: n = how many, "
        "wall ms, CPU ms (CPU is the worker process's, exact with prefork)"
    )
    print(f"  {'':<46}" + "".join(f"{name:>30}" for name in totals))
    for key, label in PROFILE_FIELDS:
        cells = []
        for task in totals.values():
            n, wall, cpu = (task.get(f"{key}_{part}", 0.0) / ok_subtasks for part in ("n", "s", "cpu"))
            cells.append(f"{n:>6.2f} n {1000 * wall:>7.2f} {1000 * cpu:>7.2f} ms")
        print(f"  {label:<46}" + "".join(f"{cell:>30}" for cell in cells))
    in_tasks = sum(task.get("wall_cpu", 0.0) for task in totals.values()) / ok_subtasks
    workers = result.cpu["workers"] / ok_subtasks
    print(
        f"  CPU inside tasks: {1000 * in_tasks:.1f} ms per subtask, of the workers' {1000 * workers:.1f} ms "
        f"(the rest: Celery's consumer, pool and message handling; idle threads)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="concurrent runs per setting")
    parser.add_argument("--items", type=int, default=16, help="recorded items (subtasks) per run, 1-32")
    parser.add_argument("--configs", default="prefork:2,prefork:4,threads:4,threads:8")
    parser.add_argument("--profile", default="prefork:4", help="setting to profile; empty for none")
    parser.add_argument("--latency", default="off", help="ORCHESTRA_REPLAY_LATENCY for the workers")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for one setting's runs")
    parser.add_argument(
        "--worker-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for the workers, e.g. DATABASE_POOL=true or BENCH_DB_REUSE_MAX=1000",
    )
    args = parser.parse_args()
    settings = [Setting.parse(text) for text in args.configs.split(",") if text]

    print(
        f"Throughput bench: {args.runs} composite runs x {args.items} recorded items ({REPLAY_SOURCE}), all created "
        f"at once, on the replay pool (replay latency {args.latency}); {os.cpu_count()} CPUs; "
        f"extra worker environment: {' '.join(args.worker_env) or 'none'}.\n"
        "subtasks/s = ok subtask attempts / (last run finished - first run created); phase/s uses the span "
        "first subtask queued -> last finished.\n"
        "CPU ms per subtask by process group (workers, postgres, redis, bench = this process).\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    env = {"ORCHESTRA_REPLAY_LATENCY": args.latency, **dict(item.split("=", 1) for item in args.worker_env)}
    results = []
    with bench_environment() as bench:
        pool_id = replay_pool()
        print(
            "  Postgres: "
            + ", ".join(
                f"{name}={postgres_setting(name)}" for name in ("synchronous_commit", "fsync", "max_connections")
            )
        )
        print(
            f"  {'setting':<14} {'runs ok':>7} {'ok sub':>6} {'wall s':>7} {'sub/s':>8} {'phase/s':>8}  CPU ms/subtask"
        )
        for setting in settings:
            results.append(one_setting(bench, setting, pool_id, args, env))
            print_result(results[-1])
        if args.profile:
            profile_path = DATA_DIR / "logs" / "throughput-profile.jsonl"
            profile_path.unlink(missing_ok=True)
            profiled = one_setting(
                bench, Setting.parse(args.profile), pool_id, args, {**env, "BENCH_PROFILE": str(profile_path)}
            )
            print("  with probes (slower):")
            print_result(profiled)
            print_profile(profile_path, profiled)
    if results:
        best = max(results, key=lambda result: result.per_s)
        print(f"Best: {best.setting} at {best.per_s:.1f} subtasks/s. End: {load_average()}")
        print(f"Goal: >= {GOAL_PER_S:.0f} subtasks/s: {verdict(best.per_s >= GOAL_PER_S)}")


if __name__ == "__main__":
    main()
