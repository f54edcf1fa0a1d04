"""Child processes for `manage.py up`: started together, stopped together.

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
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def set_pdeathsig() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_pdeathsig


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]


def spawn(name: str, command: list[str], env: dict[str, str], cwd: Path) -> Child:
    process = subprocess.Popen(command, env=env, cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent())
    return Child(name, process)


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
