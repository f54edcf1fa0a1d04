"""What `manage.py up` asks of this machine and of the servers it starts: whether a port is
free, whether a pid lives, what /api/health reports, whether a worker answers a ping; and the
wait until a role serves (`wait_ready`)."""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Any

from django.core.management.base import CommandError

from studio.queues import app as celery_app
from studio.supervisor import Child, first_exited
from studio.up.plan import Plan, probe_url

HEALTH_TIMEOUT_S = 90


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def health(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own http:// URL
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return 0, {}


def worker_answers(name: str) -> bool:
    try:
        return bool(celery_app.control.ping(destination=[name], timeout=1.0))
    except Exception:  # the broker blinked; ask again
        return False


def wait_ready(plan: Plan, children: list[Child]) -> None:
    """Until the role serves: all, /api/health ok (db, redis, a worker and the local model); web, the health
    check answers with db and redis ok (workers may start later, on other hosts); worker,
    this worker answers a ping through the broker."""
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    report: dict[str, Any] = {}
    while time.monotonic() < deadline:
        dead = first_exited(children)
        if dead is not None:
            raise CommandError(f"The {dead.name} process exited (code {dead.process.returncode}); see above.")
        if plan.web:
            status, report = health(probe_url(plan.host, plan.port))
            if status == 200 or (plan.role == "web" and all(report.get(k, {}).get("ok") for k in ("db", "redis"))):
                return
        elif worker_answers(plan.worker_name):
            return
        time.sleep(0.25)
    if not plan.web:
        raise CommandError(f"The worker {plan.worker_name} did not answer a ping within {HEALTH_TIMEOUT_S} s.")
    wanted = ("db", "redis", "worker", "model") if plan.role == "all" else ("db", "redis")
    down = [name for name in wanted if name in report and not report[name].get("ok")]
    raise CommandError(f"Not healthy after {HEALTH_TIMEOUT_S} s: {', '.join(down) or 'web'} not ok ({report}).")
