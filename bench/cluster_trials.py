"""The cluster bench's trials (bench/cluster.py), each with fresh runs POSTed through HAProxy
(`Submitter`): scaling (subtasks/s with 1, 2 and 3 worker hosts) and one trial per fault
(kill, link, web, broker; `fault_action`), each printing its figures and its goals' MET /
NOT MET.
"""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bench.cluster_stack import BROKER, LB, WEBS, WORKERS, Cluster, wait_port
from bench.crash import assess
from bench.measure import load_average, verdict
from bench.paths import DATA_DIR
from bench.workload import composite_tasks, wait_runs

FAULT_AT_S = 2.0
END_WITHIN_S = 60.0
FAULTS = ("kill", "link", "web", "broker")


@dataclass
class Submitter:
    """POSTs runs to /api/runs through the load balancer, as an API client would."""

    token: str
    pool_id: int

    def submit(self, task_ids: list[int]) -> list[int]:
        import httpx

        def one(task_id: int) -> int:
            last = ""
            with httpx.Client(base_url=f"http://{LB.address}", timeout=10) as client:
                for _ in range(20):  # bounded: 20 tries, 0.5 s apart, through a host going down
                    try:
                        response = client.post(
                            "/api/runs", json={"task_id": task_id, "pool_id": self.pool_id},
                            headers={"Authorization": f"Bearer {self.token}"},
                        )  # fmt: skip
                    except httpx.HTTPError as error:
                        last = repr(error)
                    else:
                        if response.status_code == 201:
                            return int(response.json()["id"])
                        last = f"{response.status_code} {response.text[:200]}"
                    time.sleep(0.5)
            raise RuntimeError(f"POST /api/runs failed 20 times: {last}")

        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(one, task_ids))


def subtasks_per_s(run_ids: list[int]) -> tuple[float, int, float]:
    from django.db.models import Max, Min

    from studio.models import Attempt, Run

    span = Run.objects.filter(pk__in=run_ids).aggregate(first=Min("created_at"), last=Max("finished_at"))
    ok = Attempt.objects.filter(node__run_id__in=run_ids, node__kind="subtask", status="ok").count()
    wall = (span["last"] - span["first"]).total_seconds() if span["last"] else float("nan")
    return ok / wall, ok, wall


def trial_scaling(cluster: Cluster, submitter: Submitter, args: argparse.Namespace) -> bool:
    rates = {}
    for count in (1, 2, 3):
        for host in WORKERS[count:]:
            host.kill_all()
        cluster.restart(WORKERS[:count])
        run_ids = submitter.submit(composite_tasks(runs=args.scaling_runs, items=args.items))
        statuses = wait_runs(run_ids, timeout_s=args.timeout, poll_s=0.2)
        rate, ok, wall = subtasks_per_s(run_ids)
        done = sum(status == "succeeded" for status in statuses.values())
        rates[count] = rate
        print(
            f"  {count} worker host(s): {done}/{len(run_ids)} runs succeeded, {ok} ok subtasks in {wall:.1f} s: "
            f"{rate:.1f} subtasks/s; {load_average()}",
            flush=True,
        )
    ratio = rates[3] / rates[1]
    print(f"Scaling: 3 hosts / 1 host = {ratio:.2f}x ({rates[1]:.1f} -> {rates[2]:.1f} -> {rates[3]:.1f} subtasks/s)")
    met = ratio >= 2.5
    print(f"Goal: 3 worker hosts >= 2.5x 1 worker host: {verdict(met)}", flush=True)
    return met


def fault_action(cluster: Cluster, kind: str) -> Callable[[], float]:
    """The fault; returns the wall time (unix) at which it cleared."""

    def kill() -> float:
        print(f"  kill -9 of every process of w1: {WORKERS[0].kill_all()} processes", flush=True)
        return time.time()

    def link() -> float:
        WORKERS[0].set_link(up=False)
        print("  w1's link down", flush=True)
        time.sleep(10)
        WORKERS[0].set_link(up=True)
        print("  w1's link up", flush=True)
        return time.time()

    def web() -> float:
        print(f"  web1 down: {WEBS[0].kill_all()} processes killed", flush=True)
        return time.time()

    def broker() -> float:
        if cluster.broker == "rabbitmq":
            cluster.rabbitmqctl("stop_app")
            print("  RabbitMQ stopped (stop_app)", flush=True)
            time.sleep(5)
            cluster.rabbitmqctl("start_app")
            wait_port(BROKER.address, 5672)
        else:
            redis = cluster.processes["redis"]
            redis.send_signal(signal.SIGTERM)
            redis.wait(timeout=30)
            print("  Redis stopped (SIGTERM; appendonly file kept)", flush=True)
            time.sleep(5)
            cluster.start_redis()
        print("  broker up again", flush=True)
        return time.time()

    return {"kill": kill, "link": link, "web": web, "broker": broker}[kind]


def trial_fault(cluster: Cluster, submitter: Submitter, args: argparse.Namespace, kind: str) -> bool:
    from django.db.models import Max

    from studio.models import Run

    cluster.restart([host for host in (*WEBS, *WORKERS) if not host.pids()])  # what the last trial took down
    task_ids = composite_tasks(runs=args.runs, items=args.items)
    half = len(task_ids) // 2 if kind == "web" else len(task_ids)
    run_ids = submitter.submit(task_ids[:half])
    started = time.monotonic()
    time.sleep(max(0.0, FAULT_AT_S - (time.monotonic() - started)))
    cleared = fault_action(cluster, kind)()
    run_ids += submitter.submit(task_ids[half:])  # web: through the one web host left
    wait_runs(run_ids, timeout_s=END_WITHIN_S + 30, poll_s=0.2)
    damage = assess(run_ids, DATA_DIR / "logs" / "cluster-no-call-log", set(), set())
    ended = sum(count for status, count in damage.statuses.items() if status in {"succeeded", "failed", "cancelled"})
    events_not_once = [a for a in damage.finished_attempts if damage.finished_events.get(a, 0) != 1]
    twice = len(damage.misbilled_runs) + len(events_not_once)
    last = Run.objects.filter(pk__in=run_ids).aggregate(last=Max("finished_at"))["last"]
    after = last.timestamp() - cleared if last is not None and ended == len(run_ids) else float("inf")
    print(
        f"  runs ended: {ended} / {len(run_ids)} submitted; by status: {dict(damage.statuses)}\n"
        f"  attempts billed twice: {twice} (runs misbilled {len(damage.misbilled_runs)}, finished attempts "
        f"without exactly one attempt.finished event {len(events_not_once)})\n"
        f"  event gaps: {damage.sequence_gaps} (in {damage.runs_with_gaps} runs)\n"
        f"  last run ended {after:.1f} s after the fault cleared; {load_average()}",
        flush=True,
    )
    for line in damage.other_runs[:5]:
        print(f"    {line}")
    checks = {
        "every run ends": ended == len(run_ids),
        "0 billed twice": twice == 0,
        "0 event gaps": damage.sequence_gaps == 0,
        f"all within {END_WITHIN_S:.0f} s of the fault clearing": after <= END_WITHIN_S,
    }
    for name, ok in checks.items():
        print(f"Goal ({kind}): {name}: {verdict(ok)}", flush=True)
    return all(checks.values())
