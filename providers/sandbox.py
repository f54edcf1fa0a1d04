"""Run model-written Python in an isolated, resource-limited child process.

`run_python(code)` writes the program to a private temporary directory as `main.py`,
runs it in a fresh `python -I -S` with a minimal environment, and returns a
`SandboxResult`. It never raises on hostile code: every failure is a result with
`status` "error" or "timeout" and an `error_kind`.

Containment, strongest first; `isolation()` probes once which one this machine allows:

- "root" (the worker runs as root): `unshare` puts the child in new network, mount and
  PID namespaces. The child mounts a small private tmpfs on `/tmp` holding a copy of
  its directory (so nothing it writes there reaches the disk or outlives it), fresh
  tmpfs on `/var/tmp`, `/dev/shm` and `/run/lock`, hides the repository and the home
  directory, then drops to a fresh unprivileged uid used by this run only. RLIMIT_NPROC
  does not bind root; it binds that uid, and since nothing else runs as it, the limit
  counts this program's processes alone. When the namespace's first process exits, the
  kernel kills every process in it, daemons included.
- "userns" (not root, unprivileged user namespaces allowed): the same namespaces and
  mounts inside a user namespace; the child drops every capability instead of its uid.
- "plain": no namespaces. As root the child still switches to a fresh uid where Python's
  files are readable by others; otherwise the program runs as the worker's own user.

In every mode the child sets its rlimits (CPU, address space, file size, processes, no
core files), sets no_new_privs, installs a seccomp filter that refuses `socket()` (so
`import socket`, `__import__("socket")`, ctypes and child programs all fail), new
namespaces, ptrace and io_uring, and replaces `_socket.socket` so Python code gets a
clear "network access is disabled" error. It then forks: the program runs in the child,
and the first process reaps, reports how the program ended, and kills it at the wall
limit should the parent be gone. The parent enforces the wall-clock limit, kills what is
left, caps the output it keeps, and removes the directory.

The child's code is `providers/sandbox_child.py`, which the child interpreter runs as a script
(`-I`: it cannot import this project, nor this project anything of its); it imports only the
standard library. `providers/sandbox_watch.py` watches it from this side: its output, the wall
limit, and how it ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from providers.sandbox_watch import SandboxLimits, SandboxResult, Status, classify, collect, failure

__all__ = ["Isolation", "SandboxLimits", "SandboxResult", "Status", "check_files", "isolation", "run_python"]

logger = logging.getLogger(__name__)

Mode = Literal["root", "userns", "plain"]
User = Literal["fresh", "nobody", "self"]

PROGRAM_NAME = "main.py"
CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")  # what the child process runs
_UID_BASE = 1_500_000_000  # per-run uids are drawn from [base, base + span): unused by any account
_UID_SPAN = 1_000_000
_NEVER_HIDDEN = frozenset(
    {"/", "/bin", "/dev", "/etc", "/lib", "/lib64", "/proc", "/sys", "/tmp", "/usr", "/var"}  # noqa: S108
)


@dataclass(frozen=True)
class Isolation:
    """How this machine lets the sandbox contain a program; see the module docstring."""

    mode: Mode
    unshare: str | None = None
    user: User = "self"
    """Who the program runs as: a fresh uid per run, nobody, or the worker's own user."""
    seccomp: bool = False


def run_python(
    code: str,
    *,
    stdin: str = "",
    limits: SandboxLimits = SandboxLimits(),  # noqa: B008 - frozen, so a shared default is safe
    files: dict[str, str] | None = None,
) -> SandboxResult:
    """Run `code` as `main.py` next to `files` (relative path -> text) and report what happened."""
    started = time.monotonic()
    try:
        return _run(code, stdin, limits, files or {}, isolation(), started)
    except Exception as exc:  # the sandbox's own failure; the caller still gets a result
        logger.exception("sandbox failed")
        return failure(started, "sandbox", f"The sandbox could not run the program ({exc}).")


@functools.cache
def isolation() -> Isolation:
    """The strongest containment that works here, found by running a probe program once."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
    root, unshare = os.geteuid() == 0, unshare if sys.platform == "linux" else None
    candidates: list[Isolation] = []
    if unshare and root:
        candidates += [Isolation("root", unshare, "fresh"), Isolation("root", unshare, "nobody")]
    elif unshare:  # as root, a user namespace would leave the program root-owned files to write
        candidates.append(Isolation("userns", unshare))
    if root:
        candidates += [Isolation("plain", None, "fresh"), Isolation("plain", None, "nobody")]
    candidates.append(Isolation("plain"))
    # The probe imports a module from disk, so Python's library must be readable after the switch.
    probe = "import json; print('probe-ok', open('/proc/self/status').read().count('Seccomp:\\t2'))"
    for candidate in candidates:
        result = _run(probe, "", SandboxLimits(wall_s=10), {}, candidate, time.monotonic())
        if result.ok and result.stdout.startswith("probe-ok"):
            chosen = dataclasses.replace(candidate, seccomp=result.stdout.split()[-1] == "1")
            if chosen.mode == "plain":
                logger.warning("sandbox: no namespaces here; programs are only weakly contained (%s)", chosen)
            return chosen
        logger.warning(
            "sandbox: %s isolation is unavailable here (%s %s)",
            candidate,
            result.error_message,
            result.stderr[-500:],
        )
    return Isolation("plain")


# --- parent side -------------------------------------------------------------------------


def _run(
    code: str, stdin: str, limits: SandboxLimits, files: dict[str, str], iso: Isolation, started: float
) -> SandboxResult:
    problem = check_files(files)
    if problem:
        return failure(started, "invalid_input", problem)
    workdir = tempfile.mkdtemp(prefix="sandbox-")
    try:
        _write_program(Path(workdir), code, files)
        return _execute(iso, limits, workdir, stdin.encode("utf-8", "replace"), started)
    finally:
        _remove_tree(workdir)


def check_files(files: dict[str, str]) -> str | None:
    """Why `files` cannot be written into the program's directory, or None when they can."""
    for name in files:
        path = PurePosixPath(name)
        if not name or "\0" in name or path.is_absolute() or ".." in path.parts:
            return f"The file name {name!r} must be a relative path inside the program's directory."
        if str(path) == PROGRAM_NAME:
            return f"The file name {PROGRAM_NAME!r} is reserved for the program itself."
    return None


def _write_program(workdir: Path, code: str, files: dict[str, str]) -> None:
    (workdir / PROGRAM_NAME).write_text(code, encoding="utf-8", errors="replace")
    for name, text in files.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", errors="replace")


def _execute(iso: Isolation, limits: SandboxLimits, workdir: str, stdin: bytes, started: float) -> SandboxResult:
    status_r, status_w = os.pipe()
    try:
        argv, home = _command(iso, limits, workdir, status_w)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_w,),
            start_new_session=True,
        )
    except OSError as exc:
        os.close(status_r)
        return failure(started, "sandbox", f"The sandbox could not start Python ({exc}).")
    finally:
        os.close(status_w)
    try:
        collected = collect(proc, stdin, status_r, started + limits.wall_s, limits, iso.mode != "plain")
    finally:
        os.close(status_r)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return classify(collected, limits, time.monotonic() - started)


def _command(iso: Isolation, limits: SandboxLimits, workdir: str, status_fd: int) -> tuple[list[str], str]:
    """The child's argv, and the directory it will see as its home."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    uid = {"fresh": str(_UID_BASE + secrets.randbelow(_UID_SPAN)), "nobody": "65534", "self": ""}[iso.user]
    conf = [
        f"mode={iso.mode}",
        f"uid={uid}",
        f"cpu={limits.cpu_s}",
        f"mem={limits.memory_mb * 1024 * 1024}",
        f"fsize={limits.file_mb * 1024 * 1024}",
        f"nproc={limits.processes}",
        f"tmp_mb={limits.file_mb}",
        f"wall={limits.wall_s}",
        f"status={status_fd}",
        f"prefix={prefix}",
        *(f"hide={path}" for path in _hidden_dirs(prefix)),
    ]
    child = [python, "-I", "-S", "-B", "-u", "-X", "utf8", str(CHILD_SCRIPT), *conf]
    if iso.mode == "plain" or iso.unshare is None:
        return child, workdir
    spaces = ["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if iso.mode == "userns":
        spaces = ["--user", "--map-root-user", *spaces]
    return [iso.unshare, *spaces, "--", *child], "/tmp"  # noqa: S108 - a private tmpfs there


@functools.cache
def _hidden_dirs(prefix: str) -> tuple[str, ...]:
    """Directories the child should not see: this repository, the home directory, and the
    outermost directory above Python that others may not enter (the child re-mounts Python)."""
    candidates = [str(Path(__file__).resolve().parents[1]), os.path.expanduser("~")]
    for parent in reversed(PurePosixPath(prefix).parents):
        with contextlib.suppress(OSError):
            if not os.stat(parent).st_mode & 0o001:
                candidates.append(str(parent))
                break
    hidden = {os.path.realpath(path) for path in candidates}
    return tuple(sorted(path for path in hidden if path not in _NEVER_HIDDEN and os.path.isdir(path)))


def _remove_tree(path: str) -> None:
    try:
        shutil.rmtree(path)
    except OSError:
        if os.geteuid() != 0:  # the program may have taken its own permissions away
            for root, dirs, _ in os.walk(path):
                for name in dirs:
                    sub = os.path.join(root, name)
                    if not os.path.islink(sub):
                        with contextlib.suppress(OSError):
                            os.chmod(sub, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        logger.warning("sandbox: could not remove %s", path)
