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

The child's code is the `_child_*` functions below, shipped as source to the child
interpreter (which cannot import this project); they import only the standard library.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

logger = logging.getLogger(__name__)

Status = Literal["ok", "error", "timeout"]
Mode = Literal["root", "userns", "plain"]
User = Literal["fresh", "nobody", "self"]

PROGRAM_NAME = "main.py"
_UID_BASE = 1_500_000_000  # per-run uids are drawn from [base, base + span): unused by any account
_UID_SPAN = 1_000_000
_RECORDED_KINDS = ("memory", "file_limit", "blocked", "syntax_error", "exception")  # as the child reports
_EXIT_GRACE_S = 0.5  # after the program exits, how long to wait for its output pipes to close
_FLOOD_FLOOR_BYTES = 1 << 20
_STOP_WAIT_S = 2.0  # how long a killed namespace may take to empty before its group is killed too
_NEVER_HIDDEN = frozenset(
    {"/", "/bin", "/dev", "/etc", "/lib", "/lib64", "/proc", "/sys", "/tmp", "/usr", "/var"}  # noqa: S108
)


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 10.0
    """Wall-clock timeout; the whole process group is killed when it passes."""
    cpu_s: int = 5
    """CPU seconds per process (RLIMIT_CPU); the kernel kills a process that uses more."""
    memory_mb: int = 512
    """Address space per process (RLIMIT_AS)."""
    file_mb: int = 10
    """Largest file the program may write (RLIMIT_FSIZE). With namespaces, its directory is a
    tmpfs of 4 * file_mb in all, and /var/tmp, /dev/shm and /run/lock hold file_mb each."""
    processes: int = 16
    """Processes and threads (RLIMIT_NPROC), counted for this run's own uid or user namespace."""
    output_chars: int = 20_000
    """Characters kept of stdout and of stderr; a program that prints far more is stopped."""


@dataclass(frozen=True)
class SandboxResult:
    status: Status
    stdout: str
    stderr: str
    exit_code: int | None
    error_kind: str | None
    """timeout, cpu, memory, output_limit, file_limit, syntax_error, exception, blocked,
    nonzero_exit, killed, signal, invalid_input or sandbox (the sandbox itself failed)."""
    error_message: str | None
    truncated: bool
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
        return _failure(started, "sandbox", f"The sandbox could not run the program ({exc}).")


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


@dataclass
class _Collected:
    stdout: bytearray = dataclasses.field(default_factory=bytearray)
    stderr: bytearray = dataclasses.field(default_factory=bytearray)
    seen_bytes: int = 0
    records: dict[str, str] = dataclasses.field(default_factory=dict)
    timed_out: bool = False
    flooded: bool = False
    exit_code: int = 0
    cpu_s: float = 0.0


def _run(
    code: str, stdin: str, limits: SandboxLimits, files: dict[str, str], iso: Isolation, started: float
) -> SandboxResult:
    problem = check_files(files)
    if problem:
        return _failure(started, "invalid_input", problem)
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
        return _failure(started, "sandbox", f"The sandbox could not start Python ({exc}).")
    finally:
        os.close(status_w)
    try:
        collected = _collect(proc, stdin, status_r, started + limits.wall_s, limits, iso.mode != "plain")
    finally:
        os.close(status_r)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    return _classify(collected, limits, time.monotonic() - started)


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
    child = [python, "-I", "-S", "-B", "-u", "-X", "utf8", "-c", _child_source(), *conf]
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


def _collect(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    status_fd: int,
    deadline: float,
    limits: SandboxLimits,
    namespaced: bool,
) -> _Collected:
    """Feed stdin and read output until the program exits, the deadline passes or it floods;
    then make sure nothing of it is left running, and reap it."""
    out = _Collected()
    exited, records = _Pump(proc, stdin, status_fd, out, limits.output_chars * 4).run(deadline)
    if not exited and namespaced:
        _stop_namespace(proc.pid)
    # Kill what is left of the group before reaping, so its id cannot have been reused.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        _, wait_status, usage = os.wait4(proc.pid, 0)
        out.exit_code, out.cpu_s = os.waitstatus_to_exitcode(wait_status), usage.ru_utime + usage.ru_stime
    except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored); the child's own record still tells
        out.exit_code = -signal.SIGKILL
    proc.returncode = out.exit_code
    out.records = _parse_records(records + _drain(status_fd))
    status_text, _, cpu_text = out.records.get("wait", "").partition("\t")
    with contextlib.suppress(ValueError):  # how the program itself ended, as its parent saw it
        out.exit_code, out.cpu_s = os.waitstatus_to_exitcode(int(status_text)), float(cpu_text)
    return out


class _Pump:
    """Moves bytes between the parent and the running program: stdin in; stdout, stderr and
    the child's records out. Keeps `keep` bytes of each stream and counts the rest."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes, status_fd: int, out: _Collected, keep: int) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc, self.out, self.keep, self.status_fd = proc, out, keep, status_fd
        self.flood = max(_FLOOD_FLOOR_BYTES, 16 * keep)
        self.buffers = {proc.stdout.fileno(): out.stdout, proc.stderr.fileno(): out.stderr}
        self.pending = memoryview(stdin)
        self.stdin_fd = proc.stdin.fileno() if proc.stdin is not None else -1
        self.records = b""
        self.pidfd = _pidfd_open(proc.pid)
        self.exited_at: float | None = None

    def run(self, deadline: float) -> tuple[bool, bytes]:
        """Pump until done; whether the program exited, and the raw records it sent."""
        with selectors.DefaultSelector() as sel:
            for fd in (*self.buffers, self.status_fd):
                sel.register(fd, selectors.EVENT_READ)
            if self.pidfd is not None:
                sel.register(self.pidfd, selectors.EVENT_READ)
            if self.stdin_fd >= 0:
                os.set_blocking(self.stdin_fd, False)
                sel.register(self.stdin_fd, selectors.EVENT_WRITE)
            try:
                self._loop(sel, deadline)
            finally:
                if self.pidfd is not None:
                    os.close(self.pidfd)
        return self.exited_at is not None, self.records

    def _loop(self, sel: selectors.BaseSelector, deadline: float) -> None:
        while True:
            now = time.monotonic()
            if self.exited_at is None and self.pidfd is None and _has_exited(self.proc.pid):
                self.exited_at = now
            if self.exited_at is not None:  # wait a moment for the pipes; a daemon may hold them
                deadline = min(deadline, self.exited_at + _EXIT_GRACE_S)
                if not any(fd in sel.get_map() for fd in self.buffers):
                    return
            if now >= deadline:
                self.out.timed_out = self.exited_at is None
                return
            wait = deadline - now if self.pidfd is not None else min(0.01, deadline - now)
            for key, _ in sel.select(wait):
                self._on_ready(sel, key.fd)
            if self.out.seen_bytes > self.flood:
                self.out.flooded = True
                return

    def _on_ready(self, sel: selectors.BaseSelector, fd: int) -> None:
        if fd == self.pidfd:
            self.exited_at = time.monotonic()
            sel.unregister(fd)
        elif fd == self.stdin_fd:
            self.pending = _feed(fd, self.pending)
            if not self.pending:
                sel.unregister(fd)
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.stdin_fd = -1
        elif fd == self.status_fd:
            self.records = (self.records + _read(sel, fd))[-8192:]  # the last record matters most
        else:
            data = _read(sel, fd)
            buffer = self.buffers[fd]
            buffer += data[: max(0, self.keep - len(buffer))]
            self.out.seen_bytes += len(data)


def _parse_records(data: bytes) -> dict[str, str]:
    """`kind<TAB>detail` lines from the child; for a repeated kind the last one wins."""
    records: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        kind, tab, detail = line.partition("\t")
        if tab:
            records[kind] = detail
    return records


def _stop_namespace(unshare_pid: int) -> None:
    """Kill the namespace's first process and wait for `unshare` to reap it: the kernel kills
    every other process in the namespace and lets the first one go only when all are gone."""
    try:
        with open(f"/proc/{unshare_pid}/task/{unshare_pid}/children") as children:
            pids = [int(pid) for pid in children.read().split()]
    except (OSError, ValueError):
        pids = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    give_up = time.monotonic() + _STOP_WAIT_S
    while pids and not _has_exited(unshare_pid) and time.monotonic() < give_up:
        time.sleep(0.002)


def _pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _has_exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the pipe takes now; an empty result means stdin is done."""
    try:
        return pending[os.write(fd, pending[:65536]) :]
    except BlockingIOError:
        return pending
    except OSError:  # the program closed its stdin; the rest is dropped
        return pending[:0]


def _read(sel: selectors.BaseSelector, fd: int) -> bytes:
    try:
        data = os.read(fd, 65536)
    except OSError:
        data = b""
    if not data:
        sel.unregister(fd)
    return data


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""


def _classify(out: _Collected, limits: SandboxLimits, wall_s: float) -> SandboxResult:
    stdout, cut_out = _decode(out.stdout, limits.output_chars)
    stderr, cut_err = _decode(out.stderr, limits.output_chars)
    truncated = cut_out or cut_err or out.seen_bytes > len(out.stdout) + len(out.stderr)
    kind, message = _error(out, limits)
    return SandboxResult(
        status="timeout" if kind == "timeout" else "error" if kind else "ok",
        stdout=stdout,
        stderr=stderr,
        exit_code=None if out.timed_out or out.flooded else out.exit_code,
        error_kind=kind,
        error_message=message,
        truncated=truncated,
        wall_s=wall_s,
    )


def _error(out: _Collected, limits: SandboxLimits) -> tuple[str | None, str | None]:
    """The error kind and a sentence for a person, or (None, None) when the program succeeded."""
    if out.timed_out:
        return "timeout", f"The program did not finish within {limits.wall_s:g} s and was stopped."
    if out.flooded:
        return "output_limit", "The program printed far more output than the sandbox keeps and was stopped."
    if out.exit_code == 0:
        return None, None
    if "setup" in out.records:
        return "sandbox", f"The sandbox could not isolate the program ({out.records['setup']})."
    kinds = [kind for kind in _RECORDED_KINDS if kind in out.records]
    detail = out.records[kinds[0]] if kinds else ""
    messages = {
        "memory": f"The program ran out of memory (limit {limits.memory_mb} MB).",
        "file_limit": f"The program tried to write a file larger than {limits.file_mb} MB.",
        "blocked": "The program tried to use the network, which the sandbox does not allow.",
        "syntax_error": f"The program has a syntax error: {detail}.",
        "exception": f"The program raised {detail}.",
    }
    if kinds:
        return kinds[0], messages[kinds[0]]
    if out.exit_code < 0:
        sig = -out.exit_code
        # Only RLIMIT_CPU sends SIGXCPU; a SIGKILL counts as the CPU limit when the time says so
        # (the kernel's follow-up kill a second after SIGXCPU).
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and out.cpu_s >= limits.cpu_s - 0.05):
            return "cpu", f"The program used more than {limits.cpu_s} s of CPU time and was stopped."
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGKILL:
            return "killed", "The program was killed (SIGKILL), most likely for using too much memory."
        return "signal", f"The program was killed by signal {name}."
    return "nonzero_exit", f"The program exited with status {out.exit_code}."


def _decode(data: bytearray, chars: int) -> tuple[str, bool]:
    text = data.decode("utf-8", "replace")
    return (text[:chars], True) if len(text) > chars else (text, False)


def _failure(started: float, kind: str, message: str) -> SandboxResult:
    return SandboxResult(
        status="error",
        stdout="",
        stderr="",
        exit_code=None,
        error_kind=kind,
        error_message=message,
        truncated=False,
        wall_s=time.monotonic() - started,
    )


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


# --- child side: shipped as source, run by `python -I -S -c` ------------------------------


def _child_main() -> None:
    """Isolate this process, then run main.py as __main__."""
    import os
    import sys

    conf: dict[str, list[str]] = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        conf.setdefault(key, []).append(value)
    status_fd, main_pid = int(conf["status"][0]), os.getpid()
    try:
        libc = _child_libc()
        if conf["mode"][0] != "plain":
            _child_mounts(conf, libc)
        _child_limits(conf)
        _child_drop_privileges(conf, libc)
        _child_seccomp(libc)
        blocked = _child_block_sockets()
    except BaseException as exc:
        _child_report(status_fd, main_pid, "setup", f"{type(exc).__name__}: {exc}")
        os._exit(120)
    # The program runs in a child of this process, so that it gets ordinary signals (the
    # first process of a PID namespace ignores the kernel's SIGXCPU) and so that this process
    # can reap orphans and report how the program ended; when it exits, the namespace ends.
    worker = os.fork()
    if worker == 0:
        _child_run(status_fd, os.getpid(), blocked)
        return
    _child_watchdog(worker, float(conf["wall"][0]) + 1.0)
    while True:
        pid, wait_status, usage = os.wait4(-1, 0)
        if pid == worker:
            break
    cpu = usage.ru_utime + usage.ru_stime
    _child_report(status_fd, main_pid, "wait", f"{wait_status}\t{cpu:.3f}")
    code = os.waitstatus_to_exitcode(wait_status)
    os._exit(code if code >= 0 else 128 - code)


def _child_watchdog(worker: int, seconds: float) -> None:
    """Kill the program after `seconds`, even if the parent that should stop it has died."""
    import _signal  # type: ignore[import-not-found] # `signal` would import enum: slower
    import os

    def expire(signum: int, frame: Any) -> None:
        try:  # noqa: SIM105 - the child avoids importing contextlib
            os.kill(worker, _signal.SIGKILL)
        except OSError:
            pass

    _signal.signal(_signal.SIGALRM, expire)
    _signal.setitimer(_signal.ITIMER_REAL, seconds)


def _child_libc() -> Any:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def _child_mounts(conf: dict[str, list[str]], libc: Any) -> None:
    """In the new mount namespace: /tmp becomes a private tmpfs holding a copy of the program's
    directory, the other scratch dirs become private tmpfs, hidden dirs become empty, and
    Python stays reachable."""
    import ctypes
    import os

    rdonly, nosuid, nodev, remount, bind, rec = 1, 2, 4, 32, 4096, 16384

    def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
        args = [s.encode() if s is not None else None for s in (source, target, fstype)]
        if libc.mount(args[0], args[1], args[2], flags, data.encode() if data else None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"mount {target}: {os.strerror(err)}")

    prefix = conf["prefix"][0]
    prefix_fd = os.open(prefix, os.O_PATH | os.O_DIRECTORY)
    staged: dict[str, bytes] = {}  # the parent wrote the program and its files; copy them over
    for root, _, names in os.walk("."):
        for name in names:
            with open(os.path.join(root, name), "rb") as staged_file:
                staged[os.path.join(root, name)] = staged_file.read()
    tmp, tmp_mb = "/tmp", int(conf["tmp_mb"][0])  # noqa: S108 - this namespace's own tmpfs
    mount("tmpfs", tmp, "tmpfs", nosuid | nodev, f"size={4 * tmp_mb}m,mode=700")
    os.chdir(tmp)
    for name, content in staged.items():
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as copy:
            copy.write(content)
    for path in ("/var/tmp", "/dev/shm", "/run/lock"):  # noqa: S108 - each becomes a private tmpfs
        if os.path.isdir(path) and not os.path.islink(path):
            mount("tmpfs", path, "tmpfs", nosuid | nodev, f"size={tmp_mb}m,mode=1777")
    hidden = sorted(conf.get("hide", []), key=len)
    for path in hidden:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", nosuid | nodev, "size=1m,mode=755")
    if any(prefix == path or prefix.startswith(path.rstrip("/") + "/") for path in hidden):
        os.makedirs(prefix, exist_ok=True)
        mount(f"/proc/self/fd/{prefix_fd}", prefix, None, bind | rec, None)
        mount(None, prefix, None, bind | remount | rdonly, None)
    os.close(prefix_fd)


def _child_limits(conf: dict[str, list[str]]) -> None:
    import os
    import resource

    def cap(limit: int, value: int, slack: int = 0) -> None:
        hard = resource.getrlimit(limit)[1]
        if hard != resource.RLIM_INFINITY and hard < value + slack:
            value, slack = min(value, hard), hard - min(value, hard)
        resource.setrlimit(limit, (value, value + slack))

    nproc = int(conf["nproc"][0])
    if conf["mode"][0] == "plain" and os.getuid() != 0:
        # Without a uid or user namespace of its own, the limit counts all of this user's tasks.
        nproc += _child_count_tasks(os.getuid())
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_CPU, int(conf["cpu"][0]), slack=1)  # SIGXCPU, then SIGKILL a second later
    cap(resource.RLIMIT_AS, int(conf["mem"][0]))
    cap(resource.RLIMIT_FSIZE, int(conf["fsize"][0]))
    cap(resource.RLIMIT_NPROC, nproc)
    cap(resource.RLIMIT_NOFILE, 256)


def _child_count_tasks(uid: int) -> int:
    import os

    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1"))
    return count


def _child_drop_privileges(conf: dict[str, list[str]], libc: Any) -> None:
    """Become the run's own uid when there is one (as root), or else, in a user namespace,
    drop every capability. Then forbid gaining privileges (setuid programs) for good."""
    import ctypes
    import os

    if conf["uid"][0] and os.geteuid() == 0:
        uid = int(conf["uid"][0])
        for root, dirs, names in os.walk("."):  # the program's directory
            for name in dirs + names:
                os.lchown(os.path.join(root, name), uid, uid)
        os.lchown(".", uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    elif conf["mode"][0] == "userns":
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
        if libc.capset(header, data) != 0:
            raise OSError(ctypes.get_errno(), "capset")
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def _child_seccomp(libc: Any) -> bool:
    """Refuse socket(), new namespaces, ptrace, io_uring and kernel keyrings. False where the
    architecture is unknown or seccomp is unavailable; the other layers still apply."""
    import ctypes
    import os
    import struct

    tables = {  # arch: (AUDIT_ARCH, socket, clone, clone3, [other refused syscalls])
        "x86_64": (0xC000003E, 41, 56, 435, [272, 308, 101, 425, 321, 298, 323, 248, 249, 250]),
        "aarch64": (0xC00000B7, 198, 220, 435, [97, 268, 117, 425, 280, 241, 282, 217, 218, 219]),
    }
    machine = os.uname().machine
    if machine not in tables:
        return False
    arch, nr_socket, nr_clone, nr_clone3, refused = tables[machine]
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, errno = 0x7FFF0000, 0x00050000
    eperm, eacces, enosys = 1, 13, 38
    clone_new = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("HBBI", code, jt, jf, k)

    prog = [op(load, 4), op(jeq, arch, 1, 0), op(ret, errno | eperm), op(load, 0)]
    if machine == "x86_64":  # x32 syscall numbers would bypass the table
        prog += [op(jge, 0x40000000, 0, 1), op(ret, errno | enosys)]
    for nr, err in [(nr_socket, eacces), (nr_clone3, enosys)] + [(nr, eperm) for nr in refused]:
        prog += [op(jeq, nr, 0, 1), op(ret, errno | err)]
    prog += [op(jeq, nr_clone, 0, 3), op(load, 16), op(jset, clone_new, 0, 1), op(ret, errno | eperm)]
    prog.append(op(ret, allow))
    code = ctypes.create_string_buffer(b"".join(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.addressof(code))
    return libc.prctl(22, 2, ctypes.addressof(fprog), 0, 0) == 0  # PR_SET_SECCOMP, FILTER


def _child_block_sockets() -> type[BaseException]:
    """Make every new Python socket fail with a clear error; wrapping an existing descriptor
    (socketpair, which asyncio needs) still works. Returns the error type it raises."""
    import _socket

    class NetworkDisabledError(PermissionError):
        pass

    NetworkDisabledError.__qualname__ = "NetworkDisabledError"  # how tracebacks name it

    original = _socket.socket

    class BlockedSocket(original):  # type: ignore[misc, valid-type]
        __slots__ = ()  # socket.socket subclasses this and adds its own __weakref__ slot

        def __init__(self, family: int = -1, type: int = -1, proto: int = -1, fileno: Any = None) -> None:
            if fileno is None:
                raise NetworkDisabledError(13, "network access is disabled in the sandbox")
            super().__init__(family, type, proto, fileno)

    setattr(_socket, "socket", BlockedSocket)  # noqa: B010 - mypy rejects assigning to a class
    setattr(_socket, "SocketType", BlockedSocket)  # noqa: B010
    return NetworkDisabledError


def _child_report(status_fd: int, main_pid: int, kind: str, message: str) -> None:
    """Tell the parent why the program failed; only the program's first process speaks."""
    import os

    if os.getpid() == main_pid:
        line = f"{kind}\t{message[:1000]}".replace("\n", " ") + "\n"
        try:  # noqa: SIM105 - the child avoids importing contextlib
            os.write(status_fd, line.encode("utf-8", "replace"))
        except OSError:
            pass


def _child_run(status_fd: int, main_pid: int, blocked: type[BaseException]) -> None:
    import builtins
    import os
    import sys

    path = os.path.join(os.getcwd(), "main.py")
    builtins.exit = builtins.quit = sys.exit  # type: ignore[assignment] # -S skips site, which adds them
    sys.path.insert(0, os.getcwd())
    sys.argv = [path]
    with open(path, "rb") as program:
        source = program.read()
    try:
        code = compile(source, path, "exec")
    except (SyntaxError, ValueError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        _child_report(status_fd, main_pid, "syntax_error", f"{reason}{line}")
        import traceback

        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        sys.exit(1)
    module = type(sys)("__main__")
    module.__file__ = path
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the program is the point
    except SystemExit:
        raise
    except BaseException as exc:
        kind = "exception"
        if isinstance(exc, MemoryError):
            kind = "memory"
        elif isinstance(exc, blocked):
            kind = "blocked"
        elif isinstance(exc, OSError) and exc.errno == 27:  # EFBIG: RLIMIT_FSIZE
            kind = "file_limit"
        try:
            detail = f"{type(exc).__name__}: {exc}"
        except BaseException:
            detail = type(exc).__name__
        _child_report(status_fd, main_pid, kind, detail)
        try:
            import traceback

            frames = exc.__traceback__.tb_next if exc.__traceback__ else None  # without this file's frame
            traceback.print_exception(type(exc), exc, frames)
        except BaseException:  # noqa: S110 - out of memory, most likely; the report above stands
            pass
        sys.exit(1)


_CHILD_FUNCTIONS = (
    _child_main,
    _child_watchdog,
    _child_libc,
    _child_mounts,
    _child_limits,
    _child_count_tasks,
    _child_drop_privileges,
    _child_seccomp,
    _child_block_sockets,
    _child_report,
    _child_run,
)


@functools.cache
def _child_source() -> str:
    body = "\n\n".join(inspect.getsource(function) for function in _CHILD_FUNCTIONS)
    return f"from __future__ import annotations\n\n{body}\n\n_child_main()\n"
