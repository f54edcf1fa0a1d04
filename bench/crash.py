"""Crash recovery: kill -9 Celery workers while 20 runs are in flight, restart them, count the damage.

    .venv/bin/python bench/crash.py [--runs 20] [--items 8] [--kill-after 1.0,2.0] [--sequence 1.0,2.0]
        [--visibility-timeout 10] [--broker amqp://guest:guest@127.0.0.1:5672//]

Two workers (prefork, 4 processes each, queues orchestrator and workers) run `--runs`
composite replay tasks of `--items` recorded items, with a simulated replay latency of
0.3 s per call (ORCHESTRA_REPLAY_LATENCY=fixed:0.3), so the runs take several seconds.
`--kill-after` seconds after the runs are created, worker A's whole process group (main
process and pool children) gets SIGKILL; a second later A starts again. Each value of
`--kill-after` is one trial with fresh workers and runs: at 1 s the workers are still
creating the runs' subtasks and dispatching their attempts, at 2 s mostly running them.
Then one more trial kills both, one after the other (`--sequence A_AT,B_AT`: A at the first
time, B at the second, so for a while no worker is alive), and restarts both 1 s after the
second kill (`--sequence ""` leaves it out).
The Redis broker redelivers the messages A held unacknowledged once the visibility timeout
passes: the bench sets it to `--visibility-timeout` seconds (default in the studio: 1 hour)
through bench/celery_app.py (BENCH_VISIBILITY_TIMEOUT) and CELERY_VISIBILITY_TIMEOUT. The
same number of seconds is how long a `running` attempt must be idle before a redelivery may
run it again (ORCHESTRA_ATTEMPT_STALE_S), on either broker.

`--broker URL` runs the same trials with another Celery broker, e.g. RabbitMQ
(amqp://guest:guest@127.0.0.1:5672//), which redelivers A's unacknowledged messages as
soon as A's connection closes; Redis still carries the channel layer and the results.

Printed, then checked:
- runs finished (goal: all), runs ended otherwise or still in flight, with reasons;
- attempts whose provider call ran twice: the workers log each call's attempt id as it
  starts (BENCH_CALL_LOG), so a call cut short by the kill counts (goal: only the calls under
  way in a worker when it was killed are made again); attempt.finished events
  per attempt (goal: one per finished attempt); runs whose cost_usd differs from the sum of
  their attempts' cost_usd (goal: 0, nothing billed twice);
- event sequence gaps per run (goal: 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    wait_runs,
)
from bench.paths import DATA_DIR  # noqa: E402


@dataclass
class Damage:
    statuses: Counter[str]
    other_runs: list[str]  # "run N: status: reason" for each run that did not succeed
    calls: Counter[int]  # provider calls started per attempt id
    in_flight_at_kill: set[int]  # attempts running (in any worker) just after a kill
    in_killed_worker: set[int]  # of those, the ones whose provider call was under way in A
    finished_events: Counter[int]  # attempt.finished events per attempt id
    finished_attempts: set[int]
    misbilled_runs: list[str]
    sequence_gaps: int
    runs_with_gaps: int
    unexplained: list[str] = field(default_factory=list)  # a line per repeated call not cut short by a kill


def read_call_log(path: Path, what: str) -> list[tuple[int, int, float]]:
    """(attempt id, pid, unix time) of each `what` line ("call" or "published")."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        kind, attempt, pid, when = line.split()
        if kind == what:
            rows.append((int(attempt), int(pid), float(when)))
    return rows


def _run_line(run_id: int, status: str, reason: str, published: set[int]) -> str:
    from studio.models import Attempt

    if status in TERMINAL:
        return f"run {run_id}: {status}: {reason}"
    attempts = list(Attempt.objects.filter(node__run_id=run_id).values_list("pk", "status"))
    queued = [pk for pk, status in attempts if status == "queued"]
    sent = sum(1 for pk in queued if pk in published)
    return (
        f"run {run_id}: still {status}; its attempts: {dict(Counter(status for _, status in attempts))}; "
        f"of the {len(queued)} queued, {sent} were ever sent to the broker by a worker"
    )


def assess(run_ids: list[int], call_log: Path, in_flight_at_kill: set[int], in_killed_worker: set[int]) -> Damage:
    from django.db.models import Sum

    from studio.models import Attempt, Run, RunEvent

    runs = list(Run.objects.filter(pk__in=run_ids).order_by("pk"))
    attempts = Attempt.objects.filter(node__run_id__in=run_ids)
    attempt_ids = set(attempts.values_list("pk", flat=True))
    billed = dict(attempts.values("node__run_id").annotate(total=Sum("cost_usd")).values_list("node__run_id", "total"))
    misbilled = [
        f"run {run.pk}: cost_usd {run.cost_usd} but its attempts sum to {billed.get(run.pk)}"
        for run in runs
        if run.cost_usd != (billed.get(run.pk) or 0)
    ]
    gaps = 0
    runs_with_gaps = 0
    for run in runs:
        seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
        missing = len(set(range(1, run.last_seq + 1)) - set(seqs))
        gaps += missing
        runs_with_gaps += missing > 0
    events = RunEvent.objects.filter(run_id__in=run_ids, type="attempt.finished")
    published = {attempt for attempt, _, _ in read_call_log(call_log, "published")}
    return Damage(
        statuses=Counter(run.status for run in runs),
        other_runs=[
            _run_line(run.pk, run.status, run.end_reason, published) for run in runs if run.status != "succeeded"
        ],
        # Only these runs' attempts: a run left in flight by an earlier bench may be recovered meanwhile.
        calls=Counter(attempt for attempt, _, _ in read_call_log(call_log, "call") if attempt in attempt_ids),
        in_flight_at_kill=in_flight_at_kill,
        in_killed_worker=in_killed_worker,
        finished_events=Counter(int(payload["attempt"]) for payload in events.values_list("payload", flat=True)),
        finished_attempts=set(attempts.filter(status__in=["ok", "error", "timeout"]).values_list("pk", flat=True)),
        misbilled_runs=misbilled,
        sequence_gaps=gaps,
        runs_with_gaps=runs_with_gaps,
    )


@dataclass(frozen=True)
class Kill:
    """One SIGKILL of a trial: which worker, when, what was under way."""

    worker: str  # "A" or "B"
    at_s: float  # after the runs were created
    running: int  # attempts `running` (in any worker) at that moment
    in_worker: int  # of those, the ones whose provider call was under way in the killed worker


def report(damage: Damage, runs: int, kills: list[Kill], timings: dict[str, float]) -> None:
    twice = sorted(attempt for attempt, count in damage.calls.items() if count > 1)
    expected_twice = [attempt for attempt in twice if attempt in damage.in_killed_worker]
    events_not_once = sorted(
        attempt for attempt in damage.finished_attempts if damage.finished_events.get(attempt, 0) != 1
    )
    succeeded = damage.statuses.get("succeeded", 0)
    stuck = sum(count for status, count in damage.statuses.items() if status not in TERMINAL)
    killed = " and ".join(kill.worker for kill in kills)
    print(
        f"Runs finished (succeeded): {succeeded} of {runs}; by status: {dict(damage.statuses)}\n"
        f"Runs ended otherwise or still in flight: {len(damage.other_runs)}"
    )
    for line in damage.other_runs:
        print(f"  {line}")
    for kill in kills:
        name = kill.worker
        print(f"Attempts running when {name} was killed: {kill.running}, of them in {name}: {kill.in_worker}")
    print(
        f"Provider calls: {sum(damage.calls.values())} for {len(damage.calls)} attempts; "
        f"attempts whose provider call ran twice or more: {len(twice)} "
        f"({len(expected_twice)} of them were in flight in a killed worker)\n"
        f"Finished attempts: {len(damage.finished_attempts)}; with other than exactly one attempt.finished "
        f"event: {len(events_not_once)}\n"
        f"Runs whose cost_usd differs from the sum of their attempts' cost_usd: {len(damage.misbilled_runs)}"
    )
    for line in damage.misbilled_runs:
        print(f"  {line}")
    for line in damage.unexplained:
        print(f"  repeated, not cut short by a kill: {line}")
    print(
        f"Event sequence gaps: {damage.sequence_gaps} (in {damage.runs_with_gaps} runs)\n"
        "Timeline: "
        + "; ".join(f"{kill.worker} killed at {kill.at_s:.2f} s" for kill in kills)
        + f" after the runs were created; {killed} restarted and ready at {timings['ready']:.2f} s; "
        + (
            f"first redelivered call at {timings['redelivered']:.2f} s; "
            if timings["redelivered"] == timings["redelivered"]  # not NaN: there was one
            else "no call was cut short by a kill, so none was redelivered; "
        )
        + f"{'stopped waiting (timeout)' if stuck else 'the last run ended'} at {timings['ended']:.2f} s."
    )
    print(f"Goal: {runs} of {runs} runs finished: {verdict(succeeded == runs)}")
    print(f"Goal: no attempt billed twice: {verdict(not damage.misbilled_runs and not events_not_once)}")
    print(
        "Goal: no provider call repeated beyond the attempts in flight at a kill: "
        f"{verdict(len(twice) == len(expected_twice))}"
    )
    print(f"Goal: 0 event sequence gaps: {verdict(damage.sequence_gaps == 0)}")


def trial(
    bench: BenchEnvironment, pool_id: int, args: argparse.Namespace, schedule: list[tuple[str, float]], number: int
) -> tuple[Damage, list[Kill], dict[str, float]]:
    """Fresh workers A and B, `--runs` runs, SIGKILL to each worker of `schedule` ((name, seconds
    after the runs were created), in order), restart of the killed ones 1 s after the last kill,
    wait, assess."""
    from studio.models import Attempt
    from studio.services.runs import run_create

    call_log = DATA_DIR / "logs" / f"crash-calls-{number}.log"
    call_log.unlink(missing_ok=True)
    env = {
        "ORCHESTRA_REPLAY_LATENCY": args.latency,
        "BENCH_VISIBILITY_TIMEOUT": str(args.visibility_timeout),
        "CELERY_VISIBILITY_TIMEOUT": str(args.visibility_timeout),
        "ORCHESTRA_ATTEMPT_STALE_S": str(args.visibility_timeout),  # when a `running` attempt may run again
        "BENCH_CALL_LOG": str(call_log),
    }
    task_ids = composite_tasks(runs=args.runs, items=args.items)
    workers = {
        name: bench.start_worker(f"bench-crash{name}{number}-{os.getpid()}", pool="prefork", concurrency=4, env=env)
        for name in ("A", "B")
    }
    # Per kill: the attempts running at that moment, the killed worker's pids, the wall-clock time.
    moments: list[tuple[str, float, set[int], set[int], float]] = []
    try:
        bench.wait_workers_ready(list(workers.values()))
        owner = bench_user()
        created = time.monotonic()
        run_ids = [run_create(owner=owner, task_id=task_id, pool_id=pool_id).pk for task_id in task_ids]
        for name, at_s in schedule:
            time.sleep(max(0.0, at_s - (time.monotonic() - created)))
            pids = set(workers[name].pids())
            workers[name].kill()
            wall, at_s = time.time(), time.monotonic() - created
            # Read after the kill: what the dead worker held stays `running`, and a call it began
            # in the moment before the kill is counted (read before it, such a call was missed
            # and its redelivery reported as an unexplained repeat).
            running = Attempt.objects.filter(node__run_id__in=run_ids, status="running")
            in_flight = set(running.values_list("pk", flat=True))
            moments.append((name, at_s, in_flight, pids, wall))
            print(f"  killed {name} ({len(in_flight)} attempts running at that moment; {load_average()})", flush=True)
        time.sleep(1.0)
        killed = [workers[name] for name, *_ in moments]
        for worker in killed:
            worker.start()
        bench.wait_workers_ready(killed)
        ready_at = time.monotonic() - created
        statuses = wait_runs(run_ids, timeout_s=args.timeout, poll_s=0.2)
        ended_at = time.monotonic() - created
        print(f"  runs by status after {ended_at:.1f} s: {dict(Counter(statuses.values()))}; {load_average()}")
    finally:
        for worker in workers.values():
            worker.stop()
        bench.purge_queues()
    calls = read_call_log(call_log, "call")
    kills, in_flight_any, cut_short = [], set(), set()
    redelivered = []  # seconds after the runs were created of each call made again after a kill
    for name, at_s, in_flight, pids, wall in moments:
        # Attempts whose provider call was under way in this worker when it died.
        mine = {attempt for attempt, pid, when in calls if pid in pids and when < wall and attempt in in_flight}
        kills.append(Kill(worker=name, at_s=at_s, running=len(in_flight), in_worker=len(mine)))
        in_flight_any |= in_flight
        cut_short |= mine
        redelivered += [at_s + when - wall for attempt, _, when in calls if attempt in mine and when > wall]
    damage = assess(run_ids, call_log, in_flight_any, cut_short)
    repeated = {attempt for attempt, count in damage.calls.items() if count > 1} - cut_short
    first_kill = moments[0][4] if moments else 0.0
    killed_pids = {pid: name for name, _, _, pids, _ in moments for pid in pids}
    damage = replace(
        damage,
        unexplained=[
            f"attempt {attempt}: calls at "
            + ", ".join(
                f"{when - first_kill:+.3f} s (pid {pid}{', in ' + killed_pids[pid] if pid in killed_pids else ''})"
                for a, pid, when in calls
                if a == attempt
            )
            + " from the first kill"
            + ("; it was running just after a kill" if attempt in in_flight_any else "")
            for attempt in sorted(repeated)
        ],
    )
    timings = {"ready": ready_at, "redelivered": min(redelivered, default=float("nan")), "ended": ended_at}
    return damage, kills, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--items", type=int, default=8, help="recorded items (subtasks) per run")
    parser.add_argument("--latency", default="fixed:0.3", help="ORCHESTRA_REPLAY_LATENCY for the workers")
    parser.add_argument(
        "--kill-after", default="1.0,2.0", help="seconds after the runs are created; one trial (A killed) per value"
    )
    parser.add_argument(
        "--sequence",
        default="1.0,2.0",
        help='A_AT,B_AT: one more trial killing A, then B, at these seconds, both restarted 1 s later; "" for none',
    )
    parser.add_argument(
        "--visibility-timeout",
        type=int,
        default=10,
        help="seconds: Redis redelivery; on either broker, a running attempt this old may run again",
    )
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for the runs to end")
    add_broker_argument(parser)
    args = parser.parse_args()
    schedules = [[("A", float(value))] for value in args.kill_after.split(",") if value.strip()]
    if args.sequence.strip():
        a_at, b_at = (float(value) for value in args.sequence.split(","))
        if b_at <= a_at:
            parser.error("--sequence: B must be killed after A")
        schedules.append([("A", a_at), ("B", b_at)])

    def describe(schedule: list[tuple[str, float]]) -> str:
        return ", then ".join(f"{name} at {at_s:g} s" for name, at_s in schedule)

    print(
        f"Crash bench: {args.runs} composite replay runs x {args.items} items (replay latency {args.latency}) "
        "on two workers A and B (prefork, 4 processes each); SIGKILL to a worker's process group "
        f"some seconds after the runs are created, one trial per line: {'; '.join(map(describe, schedules))}; "
        f"the killed workers restarted 1 s after the last kill; visibility timeout {args.visibility_timeout} s.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    results = []
    with bench_environment(broker=args.broker) as bench:
        print(f"Broker: {bench.describe_broker()}", flush=True)
        pool_id = replay_pool()
        for number, schedule in enumerate(schedules, start=1):
            print(f"Trial {number}: kill {describe(schedule)}", flush=True)
            results.append(trial(bench, pool_id, args, schedule, number))
    for number, (damage, kills, timings) in enumerate(results, start=1):
        print(f"--- Trial {number} (kill {describe(schedules[number - 1])})")
        report(damage, args.runs, kills, timings)


if __name__ == "__main__":
    main()
