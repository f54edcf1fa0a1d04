"""The cluster bench's hosts and what runs on them (bench/cluster.py): network namespaces
(bench/netns.py) for db (PostgreSQL, Debian's binaries, a fresh data folder), broker (Redis;
with `--broker rabbitmq` also a RabbitMQ node of its own), lb (HAProxy, round robin over the
web hosts), web1-web2 (`manage.py up --role web`) and w1-w3 (`manage.py up --role worker`).
Each process logs to `<key>.log` in the run's log folder; `Cluster.close()` kills them and
removes the namespaces and the temporary folder (`/tmp/orcl-cluster-*`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import netns
from bench.netns import SUBNET, Host
from bench.paths import DATA_DIR, ROOT

PG_BIN = Path("/usr/lib/postgresql/15/bin")
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
TMP_PREFIX = "orcl-cluster-"
DB = Host("db", f"{SUBNET}.10")
BROKER = Host("broker", f"{SUBNET}.20")
LB = Host("lb", f"{SUBNET}.5")
WEBS = [Host("web1", f"{SUBNET}.31"), Host("web2", f"{SUBNET}.32")]
WORKERS = [Host(f"w{n}", f"{SUBNET}.{40 + n}") for n in (1, 2, 3)]
WEB_PORT = 8000
START_TIMEOUT_S = 180.0


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
