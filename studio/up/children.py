"""The child processes of `manage.py up`: the web server and the Celery worker it starts, the
services file that records them (and the embedded services) for the next `up`, and the loop
that starts again each child that exits (studio/supervisor.py does the process work)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper

from studio.settings.env import SERVICES_FILE, read_services_file
from studio.supervisor import Child, reap, restart_due, spawn
from studio.up.plan import Plan
from studio.up.probes import pid_alive

# What the command line of each child holds (a pid reused by another program is left alone).
CHILD_MARKERS = {"web": "studio.asgi:application", "worker": "celery", "model": "llama_cpp.server"}


class Stop(Exception):
    """SIGINT or SIGTERM reached `up`."""


def raise_stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def refuse_second_up(stdout: OutputWrapper) -> None:
    """Refuse to start beside a running `up`; after one that was killed (SIGKILL: it could
    stop nothing), stop the web server and worker it left (embedded services are taken
    over by `studio.embedded`)."""
    if not SERVICES_FILE.exists():
        return
    recorded = read_services_file()
    pid = recorded.get("UP_PID", "")
    if pid.isdigit() and pid_alive(int(pid)):
        raise CommandError(f"Another `manage.py up` (pid {pid}) is running on {SERVICES_FILE.parent}.")
    left = {
        name: (int(recorded[f"CHILD_{name}"]), marker)
        for name, marker in CHILD_MARKERS.items()
        if recorded.get(f"CHILD_{name}", "").isdigit()
    }
    stopped = reap(left)
    if stopped:
        what = ", ".join(stopped)
        stdout.write(f"A `manage.py up` (pid {pid}) was killed; stopped what it left running: {what}.")


def write_services_file(env: dict[str, str], children: Sequence[Child] = ()) -> None:
    SERVICES_FILE.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"UP_PID={os.getpid()}", *(f"{key}={value}" for key, value in env.items())]
    lines += [f"CHILD_{child.name}={child.process.pid}" for child in children]
    SERVICES_FILE.write_text("\n".join(lines) + "\n")


def start_children(env: dict[str, str], plan: Plan) -> list[Child]:
    children = []
    if plan.web:
        web = [
            sys.executable, "-m", "uvicorn", "studio.asgi:application",
            "--host", plan.host, "--port", str(plan.port), "--lifespan", "off",
        ]  # fmt: skip
        children.append(spawn("web", web, {**env, "ORCHESTRA_PROCESS": "web"}, settings.BASE_DIR))
    if plan.worker:
        worker = [
            sys.executable, "-m", "celery", "-A", "workers", "worker",
            "-Q", ",".join(plan.queues), "--concurrency", str(plan.concurrency),
            "--loglevel", "INFO", "-n", plan.worker_name,
        ]  # fmt: skip
        children.append(spawn("worker", worker, {**env, "ORCHESTRA_PROCESS": "worker"}, settings.BASE_DIR))
    # The web server stops first, so no new work is queued while the worker drains.
    return children


def supervise(
    children: list[Child], services_env: dict[str, str] | None, stdout: OutputWrapper, stderr: OutputWrapper
) -> None:
    """Start again, with backoff, each child that exits; log both. A worker's runs in flight
    resume (their steps and attempts are acknowledged late, and the recovery sweep finds
    the rest); /api/health reports the child as down meanwhile."""
    while True:
        exited, started = restart_due(children)
        for child in exited:
            wait = max(0.0, (child.due_at or 0.0) - time.monotonic())
            stderr.write(
                f"The {child.name} process exited unexpectedly (code {child.process.returncode}); "
                f"starting it again in {wait:.0f} s (exit {child.failures} in a row)."
            )
        for child in started:
            stdout.write(f"Started the {child.name} process again (pid {child.process.pid}).")
        if started and services_env is not None:
            write_services_file(services_env, children)
        time.sleep(0.5)
