"""The bench's child processes: Celery workers (`Worker`), uvicorn (`start_server`), a free
loopback port for a server, stopping a process (or its whole group), and dying with the bench
(`_die_with_parent`: PDEATHSIG, so a child gets SIGTERM if the bench dies).

A worker runs `bench.celery_app` from the repository root; uvicorn logs to `logs/uvicorn.log`
in the bench's data folder (bench/paths.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.paths import DATA_DIR, ROOT

if TYPE_CHECKING:
    from bench.harness import BenchEnvironment

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)

    def set_pdeathsig() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_pdeathsig


@dataclass
class Worker:
    """One `celery worker` process group (its main process and its pool children)."""

    name: str
    pool: str
    concurrency: int
    queues: str
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            sys.executable, "-m", "celery", "-A", "bench.celery_app", "worker", "-Q", self.queues,
            "--pool", self.pool, "--concurrency", str(self.concurrency), "-n", f"{self.name}@%h",
            "--loglevel", "WARNING", "--without-mingle", "--without-gossip",
        ]  # fmt: skip
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: one killpg reaches the children
                preexec_fn=_die_with_parent(),
            )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pids(self) -> list[int]:
        import psutil

        if not self.running:
            return []
        assert self.process is not None
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid, *(child.pid for child in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def kill(self) -> None:
        """SIGKILL the whole worker: the main process and every pool child, at once."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, grace_s: float = 10.0) -> None:
        """Warm shutdown (SIGTERM to the main process, which lets the pool finish its tasks),
        then SIGKILL to the whole group if it is not gone within `grace_s`."""
        if not self.running:
            return
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()
        # Pool children outliving their parent are killed with the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(bench: BenchEnvironment, port: int) -> subprocess.Popen[bytes]:
    (DATA_DIR / "logs").mkdir(parents=True, exist_ok=True)
    log = (DATA_DIR / "logs" / "uvicorn.log").open("ab")
    command = [
        sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1",
        "--port", str(port), "--lifespan", "off", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=bench.env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited ({process.returncode}); see {log.name}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("uvicorn did not listen within 60 s")


def stop(process: subprocess.Popen[Any], *, group: bool, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `grace_s` (to its whole process group
    with `group`)."""
    send = (lambda sig: os.killpg(process.pid, sig)) if group else process.send_signal
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            send(signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                send(signal.SIGKILL)
            process.wait()
    if group:  # children that outlived their parent
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
