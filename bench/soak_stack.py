"""The soak's stack and its connection sampler: `manage.py up` as `make up` runs it, on a
data folder of its own that is emptied first (.data/soak, or BENCH_DATA_DIR), with a token of
an admin made for the soak; and a thread that reads pg_stat_activity every `every_s`
seconds, keeping the most connections each studio process (each names itself, `orchestra
<role> <pid>`) and all of them together held, in all and per phase of the soak.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.paths import ROOT

DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR") or ROOT / ".data" / "soak").resolve()
UP_TIMEOUT_S = 300
APP_NAME = re.compile(r"^orchestra (\S+) (\d+)$")


# The stack


@dataclass
class Stack:
    url: str
    token: str
    database_url: str
    up: subprocess.Popen[bytes]
    bound_per_process: int
    processes: int


def _fresh_data_dir() -> None:
    if DATA_DIR.exists():
        shutil.rmtree(DATA_DIR)
    (DATA_DIR / "logs").mkdir(parents=True)


def _services_file() -> dict[str, str]:
    path = DATA_DIR / "services.env"
    pairs = (line.partition("=") for line in path.read_text().splitlines()) if path.exists() else ()
    return {key: value for key, _, value in pairs}


@contextmanager
def studio_up(port: int, concurrency: int) -> Iterator[Stack]:
    """`manage.py up` on a fresh data folder; a token of an admin made for the bench."""
    _fresh_data_dir()
    env = {
        **os.environ,
        "ORCHESTRA_DATA_DIR": str(DATA_DIR),
        "DJANGO_SETTINGS_MODULE": "studio.settings.dev",
        "ORCHESTRA_DEMO_POLICY": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    log_path = DATA_DIR / "logs" / "up.log"
    with log_path.open("wb") as log:
        up = subprocess.Popen(
            [sys.executable, "manage.py", "up", "--port", str(port), "--concurrency", str(concurrency)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while b"Orchestra Studio is up" not in log_path.read_bytes():
            if up.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"`manage.py up` did not come up; see {log_path}:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.5)
        budget = re.search(rb"at most (\d+) per process", log_path.read_bytes())
        code = (
            "from studio.models import Role, User; from studio.services.tokens import token_create; "
            "u, _ = User.objects.get_or_create(username='soak', defaults={'role': Role.ADMIN}); "
            "print(token_create(user=u, name='soak')[1])"
        )
        token = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
            check=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        database_url = os.environ.get("DATABASE_URL") or _services_file()["DATABASE_URL"]
        yield Stack(
            url=f"http://127.0.0.1:{port}", token=token, database_url=database_url, up=up,
            bound_per_process=int(budget.group(1)) if budget else 0, processes=2 + concurrency,
        )  # fmt: skip
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()


# Connections


class ConnectionSampler(threading.Thread):
    """pg_stat_activity every `every_s`: connections per studio process (by the pid in its
    application_name) and in all; keeps each maximum and the per-phase maxima."""

    def __init__(self, database_url: str, every_s: float) -> None:
        super().__init__(daemon=True)
        self.database_url, self.every_s = database_url, every_s
        self.per_pid: Counter[int] = Counter()
        self.role: dict[int, str] = {}
        self.total_max = 0
        self.phase = "start"
        self.phase_max: Counter[str] = Counter()
        self.samples = 0
        self.errors: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True, application_name="soak sampler") as conn:
            while not self.stopped.is_set():
                try:
                    rows = conn.execute(
                        "SELECT application_name, count(*) FROM pg_stat_activity "
                        "WHERE application_name LIKE 'orchestra %' GROUP BY 1"
                    ).fetchall()
                except psycopg.Error as error:
                    self.errors.append(str(error))
                    rows = []
                total = 0
                for name, count in rows:
                    if match := APP_NAME.match(name):
                        pid = int(match.group(2))
                        self.role[pid] = match.group(1)
                        self.per_pid[pid] = max(self.per_pid[pid], count)
                        total += count
                self.total_max = max(self.total_max, total)
                self.phase_max[self.phase] = max(self.phase_max[self.phase], total)
                self.samples += 1
                self.stopped.wait(self.every_s)


def process_label(pid: int, role: str, up_pid: int) -> str:
    """web, worker (parent) or worker pool process, from the process tree under `up`."""
    import psutil

    try:
        parent = psutil.Process(pid).ppid()
    except psutil.NoSuchProcess:
        return f"{role} (gone)"
    if role == "worker":
        return "worker parent" if parent == up_pid else "worker pool process"
    return role
