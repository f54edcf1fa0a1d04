"""Watching the sandbox's child: feeding its stdin, collecting its stdout, stderr and status
records within the wall-clock limit, stopping it, and classifying how it ended."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "error", "timeout"]

_RECORDED_KINDS = ("memory", "file_limit", "blocked", "syntax_error", "exception")  # as the child reports
_EXIT_GRACE_S = 0.5  # after the program exits, how long to wait for its output pipes to close
_FLOOD_FLOOR_BYTES = 1 << 20
_STOP_WAIT_S = 2.0  # how long a killed namespace may take to empty before its group is killed too


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


@dataclass
class Collected:
    stdout: bytearray = dataclasses.field(default_factory=bytearray)
    stderr: bytearray = dataclasses.field(default_factory=bytearray)
    seen_bytes: int = 0
    records: dict[str, str] = dataclasses.field(default_factory=dict)
    timed_out: bool = False
    flooded: bool = False
    exit_code: int = 0
    cpu_s: float = 0.0


def collect(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    status_fd: int,
    deadline: float,
    limits: SandboxLimits,
    namespaced: bool,
) -> Collected:
    """Feed stdin and read output until the program exits, the deadline passes or it floods;
    then make sure nothing of it is left running, and reap it."""
    out = Collected()
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

    def __init__(self, proc: subprocess.Popen[bytes], stdin: bytes, status_fd: int, out: Collected, keep: int) -> None:
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


def classify(out: Collected, limits: SandboxLimits, wall_s: float) -> SandboxResult:
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


def _error(out: Collected, limits: SandboxLimits) -> tuple[str | None, str | None]:
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


def failure(started: float, kind: str, message: str) -> SandboxResult:
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
