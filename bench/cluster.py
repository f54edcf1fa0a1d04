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
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("BENCH_DATA_DIR", str(Path(__file__).resolve().parents[1] / ".data" / "cluster"))

from bench import netns  # noqa: E402
from bench.crash import assess  # noqa: E402
from bench.harness import (  # noqa: E402
    DATA_DIR,
    ROOT,
    bench_environment,
    bench_user,
    code_version,
    composite_tasks,
    load_average,
    replay_pool,
    verdict,
    wait_runs,
)
from bench.netns import SUBNET, Host  # noqa: E402

PG_BIN = Path("/usr/lib/postgresql/15/bin")
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
TMP_PREFIX = "orcl-cluster-"
DB = Host("db", f"{SUBNET}.10")
BROKER = Host("broker", f"{SUBNET}.20")
LB = Host("lb", f"{SUBNET}.5")
WEBS = [Host("web1", f"{SUBNET}.31"), Host("web2", f"{SUBNET}.32")]
WORKERS = [Host(f"w{n}", f"{SUBNET}.{40 + n}") for n in (1, 2, 3)]
WEB_PORT = 8000
FAULT_AT_S = 2.0
END_WITHIN_S = 60.0
START_TIMEOUT_S = 180.0
FAULTS = ("kill", "link", "web", "broker")


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def wait_port(address: str, port: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((address, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing answered on {address}:{port} within {timeout_s:.0f} s")


def wait_log(path: Path, text: str, process: subprocess.Popen[bytes], timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise RuntimeError(f"{path.name}: exited ({process.returncode}): {path.read_text()[-2000:]}")
        time.sleep(0.3)
    raise RuntimeError(f"{path.name}: no {text!r} within {timeout_s:.0f} s")


class Cluster:
    """The namespaces and what runs in them. `close()` removes it all."""

    def __init__(self, broker: str, concurrency: int, threads: int, latency: str) -> None:
        self.broker = broker
        self.concurrency = concurrency
        self.threads = threads
        self.latency = latency
        self.tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX))
        # One folder per run. Appending to one log per host across runs let an earlier run's
        # "web server is up" satisfy `ready` at once: every host was started together, and the
        # load met web hosts still migrating a fresh database (HAProxy: 503).
        self.logs = DATA_DIR / "logs" / f"cluster-{time.strftime('%Y%m%d-%H%M%S')}-{broker}-{os.getpid()}"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.host_env: dict[str, str] = {}

    def spawn(
        self, host: Host, key: str, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """`argv` inside `host`'s namespace, with a UTS namespace of its own named after it
        (Celery names workers after the host name)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{key}.log"
        wrapped = ["unshare", "--uts", "sh", "-c", f'hostname {host.netns}; exec "$@"', "sh", *argv]
        with log.open("ab") as out:
            process = subprocess.Popen(
                host.command(wrapped), cwd=ROOT, env=env or dict(os.environ), stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.processes[key] = process
        return process

    def build(self) -> None:
        netns.make_bridge()
        for host in (DB, BROKER, LB, *WEBS, *WORKERS):
            netns.make_host(host)
        self.start_postgres()
        self.start_redis()
        if self.broker == "rabbitmq":
            self.start_rabbitmq()

    def start_postgres(self) -> None:
        data = self.tmp / "pg"
        shutil.chown(self.tmp, "postgres")
        subprocess.run(
            [RUNUSER, "-u", "postgres", "--", str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres",
             "--auth=trust", "-E", "UTF8"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 trust\n")
        self.spawn(DB, "postgres", [
            RUNUSER, "-u", "postgres", "--", str(PG_BIN / "postgres"), "-D", str(data),
            "-c", f"listen_addresses={DB.address}", "-c", f"unix_socket_directories={self.tmp}",
            "-c", "max_connections=400", "-c", "fsync=off",
        ])  # fmt: skip
        wait_port(DB.address, 5432)

    def start_redis(self) -> None:
        folder = self.tmp / "redis"
        folder.mkdir(exist_ok=True)
        self.spawn(BROKER, "redis", [
            "redis-server", "--bind", BROKER.address, "--port", "6379", "--dir", str(folder),
            "--protected-mode", "no", "--appendonly", "yes", "--save", "",
        ])  # fmt: skip
        wait_port(BROKER.address, 6379)

    def rabbit_env(self) -> dict[str, str]:
        base = self.tmp / "rabbit"
        return {
            **os.environ,
            "HOME": str(base),
            "RABBITMQ_NODENAME": "orcl@localhost",
            "RABBITMQ_NODE_PORT": "5672",
            "RABBITMQ_DIST_PORT": "25672",
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
        }

    def start_rabbitmq(self) -> None:
        """A RabbitMQ node of its own in the broker namespace (epmd and every port are the
        namespace's, so the machine's RabbitMQ is not touched). guest may log in from the bridge."""
        base = self.tmp / "rabbit"
        base.mkdir(exist_ok=True)
        (base / "rabbitmq.conf").write_text("loopback_users = none\nlisteners.tcp.default = 5672\n")
        (base / "enabled_plugins").write_text("[].\n")
        cookie = base / ".erlang.cookie"
        cookie.write_text("ORCLCLUSTERBENCHCOOKIE")
        cookie.chmod(0o400)
        self.spawn(BROKER, "rabbitmq", ["/usr/lib/rabbitmq/bin/rabbitmq-server"], env=self.rabbit_env())
        wait_port(BROKER.address, 5672, timeout_s=120)

    def rabbitmqctl(self, *args: str) -> None:
        subprocess.run(
            BROKER.command(["/usr/lib/rabbitmq/bin/rabbitmqctl", *args]),
            env=self.rabbit_env(), check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def urls(self) -> dict[str, str]:
        urls = {
            "DATABASE_URL": f"postgres://postgres@{DB.address}:5432/postgres",
            "REDIS_URL": f"redis://{BROKER.address}:6379/0",
        }
        if self.broker == "rabbitmq":
            urls["CELERY_BROKER_URL"] = f"amqp://guest:guest@{BROKER.address}:5672//"
        return urls

    def up_env(self, bench_env: dict[str, str]) -> None:
        """What every studio host gets: the bench's environment (the cluster's URLs, dev
        settings, one data folder for the shared secrets) and the cluster's knobs."""
        self.host_env = {
            **bench_env,
            "ORCHESTRA_REPLAY_LATENCY": self.latency,
            "CELERY_VISIBILITY_TIMEOUT": "10",  # Redis redelivers a dead host's tasks after 10 s
            "ORCHESTRA_ATTEMPT_STALE_S": "10",
            # A worker process runs a batch's model calls on this many threads: with the prefork
            # count, it bounds a host's calls in flight, so one host is what limits the load.
            "ORCHESTRA_ATTEMPT_THREADS": str(self.threads),
            "ORCHESTRA_DEMO_POLICY": "false",
            "ALLOWED_HOSTS": f"{LB.address},127.0.0.1,localhost",
            "DEBUG": "false",  # `up` serves beyond loopback only without Django's debug pages
            "PYTHONUNBUFFERED": "1",
        }

    def start_web(self, host: Host) -> subprocess.Popen[bytes]:
        manage = str(ROOT / "manage.py")
        argv = [sys.executable, manage, "up", "--role", "web", "--host", "0.0.0.0", "--port", str(WEB_PORT)]  # noqa: S104
        return self.spawn(host, host.name, argv, env=self.host_env)

    def start_worker(self, host: Host) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable, str(ROOT / "manage.py"), "up", "--role", "worker",
            "--queues", "orchestrator,workers", "--concurrency", str(self.concurrency),
        ]  # fmt: skip
        return self.spawn(host, host.name, argv, env=self.host_env)

    def ready(self, hosts: list[Host]) -> None:
        for host in hosts:
            text = "web server is up" if host in WEBS else "is up on queues"
            wait_log(self.logs / f"{host.name}.log", text, self.processes[host.name])

    def restart(self, hosts: list[Host]) -> None:
        for host in hosts:
            host.kill_all()
            log = self.logs / f"{host.name}.log"
            if log.exists():  # kept, as `<host>.<n>.log`, for reading after the run
                log.rename(log.with_name(f"{host.name}.{len(list(self.logs.glob(f'{host.name}.*.log'))) + 1}.log"))
            (self.start_web if host in WEBS else self.start_worker)(host)
        self.ready(hosts)

    def start_haproxy(self) -> None:
        servers = "\n".join(
            f"    server {host.name} {host.address}:{WEB_PORT} check inter 500ms fall 2 rise 2" for host in WEBS
        )
        config = self.tmp / "haproxy.cfg"
        config.write_text(
            "global\n    maxconn 1024\n\ndefaults\n    mode http\n    timeout connect 2s\n"
            "    timeout client 60s\n    timeout server 60s\n    retries 3\n    option redispatch\n\n"
            f"frontend studio\n    bind {LB.address}:80\n    default_backend web\n\n"
            f"backend web\n    balance roundrobin\n{servers}\n"
        )
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.spawn(LB, "haproxy", [haproxy, "-db", "-f", str(config)])
        wait_port(LB.address, 80)

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
        netns.remove_all()
        shutil.rmtree(self.tmp, ignore_errors=True)


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
