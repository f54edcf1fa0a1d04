"""Child processes for `manage.py up`: started together, stopped together.

A child that exits while the studio runs (a worker killed with `kill -9`, a model server that
crashed) is started again with backoff (`restart_due`), and `up` logs each exit and start.

Children run in their own sessions, so a Ctrl-C in the terminal reaches only `up`,
which then stops them in order. On Linux each child is also told to exit if `up`
itself dies (PR_SET_PDEATHSIG), so no server is left holding the port.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def set_pdeathsig() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_pdeathsig


# A child that exits is started again after 1, 2, 4, ... seconds, at most RESTART_BACKOFF_MAX_S;
# one that then runs RESTART_STEADY_S without exiting starts from 1 s again.
RESTART_BACKOFF_MAX_S = 30.0
RESTART_STEADY_S = 60.0


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: Path = Path()
    started_at: float = field(default_factory=time.monotonic)
    restarts: int = 0  # how many times it was started again
    failures: int = 0  # exits in a row, each within RESTART_STEADY_S of its start
    due_at: float | None = None  # when an exited child is started again

    def start_again(self) -> None:
        self.process = _popen(self.command, self.env, self.cwd)
        self.started_at, self.due_at = time.monotonic(), None
        self.restarts += 1


def _popen(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent())


def spawn(name: str, command: list[str], env: dict[str, str], cwd: Path) -> Child:
    return Child(name, _popen(command, env, cwd), command=command, env=env, cwd=Path(cwd))


def restart_delay(failures: int) -> float:
    """Seconds before the next start of a child that exited `failures` times in a row."""
    return min(RESTART_BACKOFF_MAX_S, 2.0 ** max(0, failures - 1))


def restart_due(children: list[Child], now: float | None = None) -> tuple[list[Child], list[Child]]:
    """One supervision tick: (the children that just exited, each now given a time to start
    again; the children started again in this tick)."""
    now = time.monotonic() if now is None else now
    exited, started = [], []
    for child in children:
        if child.due_at is None and child.process.poll() is not None:
            steady = now - child.started_at >= RESTART_STEADY_S
            child.failures = 1 if steady else child.failures + 1
            child.due_at = now + restart_delay(child.failures)
            exited.append(child)
        elif child.due_at is not None and now >= child.due_at:
            child.start_again()
            started.append(child)
    return exited, started


def first_exited(children: list[Child]) -> Child | None:
    return next((child for child in children if child.process.poll() is not None), None)


def stop_all(children: list[Child], grace_s: float = 15.0) -> None:
    """SIGTERM each child (in the order given), then SIGKILL whoever outlives the grace period."""
    for child in children:
        if child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in children:
        remaining = max(0.1, deadline - time.monotonic())
        try:
            child.process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()


def reap(children: dict[str, tuple[int, str]], grace_s: float = 10.0) -> list[str]:
    """Stop what a killed `up` left running: each of `children` (name -> (pid, which is its
    process group, a marker)) still alive whose command line holds its marker (so a pid
    reused since by another program is left alone). SIGTERM to the group, SIGKILL after
    `grace_s`. Returns "name (pid N)" for each one stopped."""
    import os

    import psutil

    stopped = []
    for name, (pid, marker) in children.items():
        try:
            if marker not in " ".join(psutil.Process(pid).cmdline()):
                continue
            os.killpg(pid, signal.SIGTERM)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
            continue
        try:
            psutil.Process(pid).wait(timeout=grace_s)
        except psutil.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
        stopped.append(f"{name} (pid {pid})")
    return stopped
