"""Service restarts: stop Redis, then PostgreSQL, while 20 runs are in flight; start them again.

    .venv/bin/python bench/restarts.py [--runs 20] [--items 8] [--services redis,postgres] [--at 1.5]
        [--down 3] [--visibility-timeout 10] [--timeout 120] [--broker amqp://guest:guest@127.0.0.1:5672//]

Two workers A and B (prefork, 4 processes each, queues orchestrator and workers) run `--runs`
composite replay tasks of `--items` recorded items, with a simulated replay latency of 0.3 s
per call, as in bench/crash.py. One trial per service of `--services`, with fresh workers
and runs: `--at` seconds after the runs are created the embedded service is stopped (Redis
with SIGTERM, which writes its dump; PostgreSQL with `pg_ctl stop -m fast`, which cuts every
session), left down `--down` seconds, and started again on the same socket and data folder.
Nothing else is touched: no worker is restarted, no run is stepped by hand. The visibility
timeout is `--visibility-timeout` seconds (BENCH_VISIBILITY_TIMEOUT and CELERY_VISIBILITY_TIMEOUT,
as in bench/crash.py).

`--broker URL` makes another server Celery's broker, e.g. RabbitMQ
(amqp://guest:guest@127.0.0.1:5672//). Redis then carries only the channel layer, the
results and the cache, and the trials are rabbitmq, redis and postgres by default: `rabbitmq`
stops this machine's RabbitMQ with `rabbitmqctl stop_app` and starts it with `start_app`
(every connection drops; durable queues and persistent messages stay).

Printed, then checked:
- runs finished (goal: all, with no manual step), runs ended otherwise or still in flight;
- workers still alive at the end (goal: both);
- provider calls started after their attempt had been recorded as finished (goal: 0: no
  finished attempt is executed again); calls made twice for an attempt whose first result
  could not be recorded are counted and shown, not a failure;
- attempt.finished events per finished attempt (goal: exactly one) and runs whose cost_usd
  differs from the sum of their attempts' (goal: 0: nothing billed twice);
- event sequence gaps per run (goal: 0);
- what the workers logged (warnings and errors, by kind).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.crash import Damage, assess, read_call_log  # noqa: E402
from bench.harness import (  # noqa: E402
    TERMINAL,
    BenchEnvironment,
    add_broker_argument,
    bench_environment,
    bench_user,
    code_version,
    composite_tasks,
    load_average,
    replay_pool,
    verdict,
)
from bench.paths import DATA_DIR  # noqa: E402
from bench.processes import Worker  # noqa: E402
from studio.settings.env import broker_kind  # noqa: E402

LOG_LINE = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b.*?:\s*(.*)")


@dataclass
class Outcome:
    service: str
    damage: Damage
    alive: dict[str, bool]  # worker name -> still running at the end
    calls_after_finish: list[str]  # "attempt N: call at +S s after it was recorded"
    log_kinds: dict[str, Counter[str]]  # worker name -> first words of its warnings and errors
    timings: dict[str, float]


def wait_runs_through_outages(run_ids: list[int], timeout_s: float, poll_s: float = 0.2) -> dict[int, str]:
    """As harness.wait_runs, but a query that fails (PostgreSQL is down or just came back)
    is tried again on a fresh connection until the timeout."""
    from django.db import OperationalError, close_old_connections, connection

    from studio.models import Run

    deadline = time.monotonic() + timeout_s
    statuses: dict[int, str] = {}
    while True:
        try:
            close_old_connections()
            statuses = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))
        except OperationalError:
            connection.close()
        else:
            if len(statuses) == len(run_ids) and all(status in TERMINAL for status in statuses.values()):
                return statuses
        if time.monotonic() > deadline:
            return statuses
        time.sleep(poll_s)


def _last_finish(run_ids: list[int]) -> float:
    """Unix time of the last attempt recorded as finished, or NaN."""
    from django.db.models import Max

    from studio.models import Attempt

    last = Attempt.objects.filter(node__run_id__in=run_ids).aggregate(last=Max("finished_at"))["last"]
    return last.timestamp() if last is not None else float("nan")


def _calls_after_finish(run_ids: list[int], call_log: Path) -> list[str]:
    """Provider calls that started after their attempt was recorded: a finished attempt run again."""
    from studio.models import Attempt

    finished = {
        pk: at.timestamp()
        for pk, at in Attempt.objects.filter(node__run_id__in=run_ids).values_list("pk", "finished_at")
        if at is not None
    }
    return [
        f"attempt {attempt}: a call started {when - finished[attempt]:.2f} s after it was recorded"
        for attempt, _, when in read_call_log(call_log, "call")
        if attempt in finished and when > finished[attempt]
    ]


def _log_kinds(worker: Worker) -> Counter[str]:
    """The workers' warnings and errors, by their first words (exception names kept)."""
    kinds: Counter[str] = Counter()
    if not worker.log_path.exists():
        return kinds
    for line in worker.log_path.read_text(errors="replace").splitlines():
        match = LOG_LINE.search(line)
        if match:
            kinds[f"{match.group(1)} {' '.join(match.group(2).split()[:8])[:90]}"] += 1
    return kinds


def trial(bench: BenchEnvironment, pool_id: int, args: argparse.Namespace, service: str, number: int) -> Outcome:
    """Fresh workers A and B, `--runs` runs, the service stopped `--at` s later and started
    `--down` s after that; wait, assess."""
    from studio.services.runs import run_create

    restart: Callable[[float], None] = {
        "redis": bench.restart_redis,
        "postgres": bench.restart_postgres,
        "rabbitmq": bench.restart_rabbitmq,
    }[service]
    call_log = DATA_DIR / "logs" / f"restarts-calls-{number}.log"
    call_log.unlink(missing_ok=True)
    env = {
        "ORCHESTRA_REPLAY_LATENCY": args.latency,
        "BENCH_VISIBILITY_TIMEOUT": str(args.visibility_timeout),
        "CELERY_VISIBILITY_TIMEOUT": str(args.visibility_timeout),
        "ORCHESTRA_ATTEMPT_STALE_S": str(args.visibility_timeout),  # when a `running` attempt may run again
        "BENCH_CALL_LOG": str(call_log),
    }
    if args.recovery_interval is not None:
        env["ORCHESTRA_RECOVERY_INTERVAL_S"] = str(args.recovery_interval)
    task_ids = composite_tasks(runs=args.runs, items=args.items)
    workers = {
        name: bench.start_worker(f"bench-restart{name}{number}-{os.getpid()}", pool="prefork", concurrency=4, env=env)
        for name in ("A", "B")
    }
    try:
        bench.wait_workers_ready(list(workers.values()))
        owner = bench_user()
        created, created_wall = time.monotonic(), time.time()
        run_ids = [run_create(owner=owner, task_id=task_id, pool_id=pool_id).pk for task_id in task_ids]
        time.sleep(max(0.0, args.at - (time.monotonic() - created)))
        stopped_at = time.monotonic() - created
        restart(args.down)
        back_at = time.monotonic() - created
        print(f"  {service} stopped at {stopped_at:.2f} s, back at {back_at:.2f} s; {load_average()}", flush=True)
        statuses = wait_runs_through_outages(run_ids, timeout_s=args.timeout)
        ended_at = time.monotonic() - created
        print(f"  runs by status after {ended_at:.1f} s: {dict(Counter(statuses.values()))}; {load_average()}")
        alive = {name: worker.running for name, worker in workers.items()}
    finally:
        for worker in workers.values():
            worker.stop()
        bench.purge_queues()
    return Outcome(
        service=service,
        damage=assess(run_ids, call_log, set(), set()),
        alive=alive,
        calls_after_finish=_calls_after_finish(run_ids, call_log),
        log_kinds={name: _log_kinds(worker) for name, worker in workers.items()},
        timings={
            "stopped": stopped_at,
            "back": back_at,
            "last_finish": _last_finish(run_ids) - created_wall,
            "ended": ended_at,
        },
    )


def report(outcome: Outcome, runs: int) -> None:
    damage = outcome.damage
    twice = sorted(attempt for attempt, count in damage.calls.items() if count > 1)
    events_not_once = sorted(
        attempt for attempt in damage.finished_attempts if damage.finished_events.get(attempt, 0) != 1
    )
    succeeded = damage.statuses.get("succeeded", 0)
    stuck = sum(count for status, count in damage.statuses.items() if status not in TERMINAL)
    timings = outcome.timings
    print(
        f"Runs finished (succeeded): {succeeded} of {runs}; by status: {dict(damage.statuses)}\n"
        f"Runs ended otherwise or still in flight: {len(damage.other_runs)}"
    )
    for line in damage.other_runs:
        print(f"  {line}")
    print(f"Workers alive at the end: {', '.join(f'{n}: {alive}' for n, alive in outcome.alive.items())}")
    for name, kinds in outcome.log_kinds.items():
        print(f"Worker {name} logged {sum(kinds.values())} warnings and errors" + (":" if kinds else ""))
        for kind, count in kinds.most_common(6):
            print(f"  {count} x {kind}")
    print(
        f"Provider calls: {sum(damage.calls.values())} for {len(damage.calls)} attempts; attempts called twice or "
        f"more: {len(twice)}; calls started after their attempt was recorded: {len(outcome.calls_after_finish)}"
    )
    for line in outcome.calls_after_finish[:10]:
        print(f"  {line}")
    print(
        f"Finished attempts: {len(damage.finished_attempts)}; with other than exactly one attempt.finished "
        f"event: {len(events_not_once)}\n"
        f"Runs whose cost_usd differs from the sum of their attempts' cost_usd: {len(damage.misbilled_runs)}"
    )
    for line in damage.misbilled_runs:
        print(f"  {line}")
    print(
        f"Event sequence gaps: {damage.sequence_gaps} (in {damage.runs_with_gaps} runs)\n"
        f"Timeline: {outcome.service} stopped at {timings['stopped']:.2f} s after the runs were created, back at "
        f"{timings['back']:.2f} s; last attempt recorded at {timings['last_finish']:.2f} s; "
        f"{'stopped waiting (timeout)' if stuck else 'the last run ended'} at {timings['ended']:.2f} s."
    )
    print(f"Goal: {runs} of {runs} runs finished without a manual step: {verdict(succeeded == runs)}")
    print(f"Goal: every worker survived: {verdict(all(outcome.alive.values()))}")
    print(f"Goal: no finished attempt executed again: {verdict(not outcome.calls_after_finish)}")
    print(f"Goal: no attempt billed twice: {verdict(not damage.misbilled_runs and not events_not_once)}")
    print(f"Goal: 0 event sequence gaps: {verdict(damage.sequence_gaps == 0)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--items", type=int, default=8, help="recorded items (subtasks) per run")
    parser.add_argument("--latency", default="fixed:0.3", help="ORCHESTRA_REPLAY_LATENCY for the workers")
    parser.add_argument(
        "--services",
        default=None,
        help="one trial per service, in this order: redis, postgres, rabbitmq "
        "(default: redis,postgres; with an amqp:// --broker, rabbitmq,redis,postgres)",
    )
    parser.add_argument("--at", type=float, default=1.5, help="seconds after the runs are created to stop it")
    parser.add_argument("--down", type=float, default=3.0, help="seconds the service stays down")
    parser.add_argument(
        "--visibility-timeout",
        type=int,
        default=10,
        help="seconds: Redis redelivery; on either broker, a running attempt this old may run again",
    )
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for the runs to end")
    parser.add_argument(
        "--recovery-interval", type=int, default=None, help="ORCHESTRA_RECOVERY_INTERVAL_S; default: the studio's"
    )
    add_broker_argument(parser)
    args = parser.parse_args()
    amqp = broker_kind(args.broker or "redis://") == "amqp"
    chosen = args.services if args.services is not None else ("rabbitmq,redis,postgres" if amqp else "redis,postgres")
    services = [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = set(services) - {"redis", "postgres", "rabbitmq"}
    if unknown:
        parser.error(f"--services: unknown {', '.join(sorted(unknown))}; choose redis, postgres, rabbitmq")
    if "rabbitmq" in services and not amqp:
        parser.error("--services rabbitmq: RabbitMQ is restarted only as the broker (--broker amqp://...)")

    print(
        f"Restart bench: {args.runs} composite replay runs x {args.items} items (replay latency {args.latency}) "
        f"on two workers A and B (prefork, 4 processes each); {args.at:g} s after the runs are created, "
        f"{' (one trial), then '.join(services)} (one trial) is stopped, left down {args.down:g} s and started "
        f"again; no worker is restarted; visibility timeout {args.visibility_timeout} s.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    outcomes = []
    with bench_environment(broker=args.broker) as bench:
        from django.conf import settings

        print(f"Broker: {bench.describe_broker()}", flush=True)

        interval = args.recovery_interval
        if interval is None:
            interval = settings.ORCHESTRA_RECOVERY_INTERVAL_S
        print(
            f"Recovery sweep (ORCHESTRA_RECOVERY_INTERVAL_S): every {interval} s, runs quiet for as long are stepped; "
            f"publish retries: {settings.CELERY_TASK_PUBLISH_RETRY_POLICY}",
            flush=True,
        )
        pool_id = replay_pool()
        for number, service in enumerate(services, start=1):
            print(f"Trial {number}: restart {service}", flush=True)
            outcomes.append(trial(bench, pool_id, args, service, number))
    for number, outcome in enumerate(outcomes, start=1):
        print(f"--- Trial {number} ({outcome.service} down {args.down:g} s)")
        report(outcome, args.runs)


if __name__ == "__main__":
    main()
