"""A cluster on one machine: hosts as network namespaces on a private bridge (issue 28).

    sudo .venv/bin/python bench/cluster.py [--broker redis|rabbitmq|both] [--trials scaling,kill,link,web,broker]
        [--runs 36] [--scaling-runs 72] [--items 8] [--concurrency 2] [--threads 2] [--latency fixed:0.5]
    sudo .venv/bin/python bench/cluster.py --cleanup      # removes whatever a killed bench left

Hosts (namespaces `orcl-*`, addresses on the bridge `orclbr0`, 10.213.77.0/24, made and
removed by the bench; nothing routes out of it):
- db 10.213.77.10: PostgreSQL (Debian's binaries, a fresh data folder);
- broker 10.213.77.20: Redis (channel layer, results, cache; Celery's broker too), and with
  `--broker rabbitmq` a RabbitMQ node of its own (its own node name, ports and folders) as
  Celery's broker;
- lb 10.213.77.5: HAProxy on :80, round robin over web1 and web2;
- web1 10.213.77.31, web2 10.213.77.32: `manage.py up --role web`;
- w1..w3 10.213.77.41-43: `manage.py up --role worker --concurrency 2` (prefork), each process
  making at most `--threads` 2 model calls at once (ORCHESTRA_ATTEMPT_THREADS): 4 calls in
  flight per host, about 8 subtasks/s at 0.5 s a call, so the load saturates one host
  while the whole cluster stays well under the 2 cores.

Load: composite replay runs (bench.workload), each POSTed to /api/runs through HAProxy with
a bearer token, replay latency 0.5 s per model call (ORCHESTRA_REPLAY_LATENCY), so a
subtask waits on I/O and the 2 cores are not the limit.

Trials (each with fresh runs):
- scaling: subtasks/s (ok subtask attempts / (last run finished - first run created)) with
  1, 2 and 3 worker hosts, `--scaling-runs` runs each; goal 3 hosts >= 2.5 x 1 host. The
  span counts the ramp (runs POSTed one by one, their first steps) and the tail (the last
  runs' last subtasks) at every host count: with 36 runs, 3 hosts finish in about 17 s, and
  those few fixed seconds alone held the ratio near 2.35-2.65 from run to run; with 72 the
  steady part dominates;
- kill: SIGKILL to every process of w1 (`ip netns pids`) 2 s into the load; it stays dead;
- link: w1's link down for 10 s, then up;
- web: every process of web1 killed 2 s into the load; half the runs are submitted after;
- broker: the broker host's broker restarted (Redis: SIGTERM, appendonly file kept; RabbitMQ:
  `rabbitmqctl stop_app` / `start_app`), 5 s down.
For each fault: runs finished / submitted, attempts billed twice, event gaps (bench.crash's
checks), and the time from the fault clearing (kill: the kill; link: link up; web: the kill,
as nothing needs web1 afterwards; broker: broker up) until the last run ended. Goals: every
run ends, 0 billed twice, 0 gaps, all within 60 s of the fault clearing.

Logs: one folder per run, `<BENCH_DATA_DIR>/logs/cluster-<date>-<time>-<broker>-<pid>/`
(printed at the start), `<host>.log` per host and service.

Everything made is removed on exit, Ctrl-C, SIGTERM or an exception; `--cleanup` removes
leftovers by name prefix (bench/netns.py). Needs root.

The hosts and what runs on them are in bench/cluster_stack.py, the trials in
bench/cluster_trials.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("BENCH_DATA_DIR", str(Path(__file__).resolve().parents[1] / ".data" / "cluster"))

from bench import netns  # noqa: E402
from bench.cluster_stack import TMP_PREFIX, WEBS, WORKERS, Cluster  # noqa: E402
from bench.cluster_trials import FAULTS, Submitter, trial_fault, trial_scaling  # noqa: E402
from bench.harness import bench_environment, bench_user, code_version, load_average, replay_pool  # noqa: E402
from bench.netns import SUBNET  # noqa: E402


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def run_cluster(args: argparse.Namespace) -> None:
    trials = [name.strip() for name in args.trials.split(",") if name.strip()]
    print(
        f"Cluster bench ({args.broker} broker): hosts as network namespaces on {SUBNET}.0/24; db, broker, "
        f"HAProxy, 2 web hosts, 3 worker hosts (prefork x {args.concurrency}, {args.threads} call threads each); "
        f"{args.runs} composite replay runs per fault trial ({args.scaling_runs} per scaling step) "
        f"x {args.items} items through HAProxy, replay latency {args.latency}; trials: {', '.join(trials)}.\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    cluster = Cluster(args.broker, args.concurrency, args.threads, args.latency)
    print(f"Logs: {cluster.logs}", flush=True)
    try:
        netns.remove_all()
        cluster.build()
        os.environ.update(cluster.urls())
        if args.broker == "redis":
            os.environ.pop("CELERY_BROKER_URL", None)
        with bench_environment(broker=cluster.urls().get("CELERY_BROKER_URL")) as bench:
            print(f"Broker: {bench.describe_broker()}", flush=True)
            from studio.services.tokens import token_create

            pool_id = replay_pool()
            submitter = Submitter(token=token_create(user=bench_user(), name="cluster")[1], pool_id=pool_id)
            cluster.up_env(bench.env)
            cluster.start_web(WEBS[0])
            cluster.ready([WEBS[0]])
            cluster.start_web(WEBS[1])
            cluster.start_haproxy()
            cluster.ready([WEBS[1]])
            for host in WORKERS:
                cluster.start_worker(host)
            cluster.ready(WORKERS)
            print(f"Cluster up; {load_average()}", flush=True)
            for name in trials:
                print(f"--- Trial {name} ({args.broker})", flush=True)
                if name == "scaling":
                    trial_scaling(cluster, submitter, args)
                else:
                    trial_fault(cluster, submitter, args, name)
                bench.purge_queues()
    finally:
        cluster.close()
        print("Cleaned up: namespaces, links, bridge and processes removed.", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", choices=("redis", "rabbitmq", "both"), default="redis")
    parser.add_argument("--trials", default="scaling," + ",".join(FAULTS), help="scaling,kill,link,web,broker")
    parser.add_argument("--runs", type=int, default=36, help="runs per fault trial")
    parser.add_argument("--scaling-runs", type=int, default=72, help="runs per host count of the scaling trial")
    parser.add_argument("--items", type=int, default=8, help="recorded items (subtasks) per run")
    parser.add_argument("--concurrency", type=int, default=2, help="prefork processes per worker host")
    parser.add_argument(
        "--threads", type=int, default=2, help="model-call threads per worker process (ORCHESTRA_ATTEMPT_THREADS)"
    )
    parser.add_argument("--latency", default="fixed:0.5", help="ORCHESTRA_REPLAY_LATENCY of the workers")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for one scaling step's runs")
    parser.add_argument("--cleanup", action="store_true", help="remove what an earlier bench left, and exit")
    args = parser.parse_args()
    unknown = {name.strip() for name in args.trials.split(",") if name.strip()} - {"scaling", *FAULTS}
    if unknown:
        parser.error(f"--trials: unknown {', '.join(sorted(unknown))}")
    if os.geteuid() != 0:
        raise SystemExit("bench/cluster.py needs root (ip netns); run it with sudo")
    signal.signal(signal.SIGTERM, _raise_exit)
    if args.cleanup:
        removed = netns.remove_all()
        for folder in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"folder {folder}")
        print("Removed: " + (", ".join(removed) or "nothing"))
        return
    if args.broker == "both":
        for broker in ("redis", "rabbitmq"):
            rest, skip = [], False
            for arg in sys.argv[1:]:  # every option but --broker
                if not skip and not arg.startswith("--broker"):
                    rest.append(arg)
                skip = arg == "--broker"
            command = [sys.executable, __file__, *rest, "--broker", broker]
            subprocess.run(command, check=False, timeout=3600)
        return
    run_cluster(args)


if __name__ == "__main__":
    main()
