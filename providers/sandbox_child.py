"""The sandbox's child process: run as a script by `python -I -S -B -u -X utf8`, under
`unshare` where the machine allows (providers.sandbox builds the command line).

It isolates itself (mounts, rlimits, a fresh uid or no capabilities, no_new_privs, a seccomp
filter, Python sockets refused), then forks: the program, `main.py` in the working directory,
runs in the child as `__main__`; this first process reaps, reports how the program ended on
the status descriptor, and kills it at the wall limit should the parent be gone.

It imports only the standard library, and as little of it as it can (no `signal`, which
imports `enum`, nor `contextlib`): the program's start-up time is the sandbox's overhead.
Its arguments are `key=value` pairs (providers.sandbox._command).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found] # `signal` would import enum: slower
import _socket
import builtins
import ctypes
import os
import resource
import struct
import sys

TYPE_CHECKING = False  # `typing` is not imported at run time: it would slow every program's start
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    """Isolate this process, then run main.py as __main__."""
    conf: dict[str, list[str]] = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        conf.setdefault(key, []).append(value)
    status_fd, main_pid = int(conf["status"][0]), os.getpid()
    try:
        libc = load_libc()
        if conf["mode"][0] != "plain":
            make_mounts(conf, libc)
        set_limits(conf)
        drop_privileges(conf, libc)
        install_seccomp(libc)
        blocked = block_sockets()
    except BaseException as exc:
        report(status_fd, main_pid, "setup", f"{type(exc).__name__}: {exc}")
        os._exit(120)
    # The program runs in a child of this process, so that it gets ordinary signals (the
    # first process of a PID namespace ignores the kernel's SIGXCPU) and so that this process
    # can reap orphans and report how the program ended; when it exits, the namespace ends.
    worker = os.fork()
    if worker == 0:
        run_program(status_fd, os.getpid(), blocked)
        return
    watchdog(worker, float(conf["wall"][0]) + 1.0)
    while True:
        pid, wait_status, usage = os.wait4(-1, 0)
        if pid == worker:
            break
    cpu = usage.ru_utime + usage.ru_stime
    report(status_fd, main_pid, "wait", f"{wait_status}\t{cpu:.3f}")
    code = os.waitstatus_to_exitcode(wait_status)
    os._exit(code if code >= 0 else 128 - code)


def watchdog(worker: int, seconds: float) -> None:
    """Kill the program after `seconds`, even if the parent that should stop it has died."""

    def expire(signum: int, frame: Any) -> None:
        try:  # noqa: SIM105 - the child avoids importing contextlib
            os.kill(worker, _signal.SIGKILL)
        except OSError:
            pass

    _signal.signal(_signal.SIGALRM, expire)
    _signal.setitimer(_signal.ITIMER_REAL, seconds)


def load_libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return libc


def make_mounts(conf: dict[str, list[str]], libc: Any) -> None:
    """In the new mount namespace: /tmp becomes a private tmpfs holding a copy of the program's
    directory, the other scratch dirs become private tmpfs, hidden dirs become empty, and
    Python stays reachable."""
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


def set_limits(conf: dict[str, list[str]]) -> None:
    def cap(limit: int, value: int, slack: int = 0) -> None:
        hard = resource.getrlimit(limit)[1]
        if hard != resource.RLIM_INFINITY and hard < value + slack:
            value, slack = min(value, hard), hard - min(value, hard)
        resource.setrlimit(limit, (value, value + slack))

    nproc = int(conf["nproc"][0])
    if conf["mode"][0] == "plain" and os.getuid() != 0:
        # Without a uid or user namespace of its own, the limit counts all of this user's tasks.
        nproc += count_tasks(os.getuid())
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_CPU, int(conf["cpu"][0]), slack=1)  # SIGXCPU, then SIGKILL a second later
    cap(resource.RLIMIT_AS, int(conf["mem"][0]))
    cap(resource.RLIMIT_FSIZE, int(conf["fsize"][0]))
    cap(resource.RLIMIT_NPROC, nproc)
    cap(resource.RLIMIT_NOFILE, 256)


def count_tasks(uid: int) -> int:
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


def drop_privileges(conf: dict[str, list[str]], libc: Any) -> None:
    """Become the run's own uid when there is one (as root), or else, in a user namespace,
    drop every capability. Then forbid gaining privileges (setuid programs) for good."""
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


def install_seccomp(libc: Any) -> bool:
    """Refuse socket(), new namespaces, ptrace, io_uring and kernel keyrings. False where the
    architecture is unknown or seccomp is unavailable; the other layers still apply."""
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


def block_sockets() -> type[BaseException]:
    """Make every new Python socket fail with a clear error; wrapping an existing descriptor
    (socketpair, which asyncio needs) still works. Returns the error type it raises."""

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


def report(status_fd: int, main_pid: int, kind: str, message: str) -> None:
    """Tell the parent why the program failed; only the program's first process speaks."""
    if os.getpid() == main_pid:
        line = f"{kind}\t{message[:1000]}".replace("\n", " ") + "\n"
        try:  # noqa: SIM105 - the child avoids importing contextlib
            os.write(status_fd, line.encode("utf-8", "replace"))
        except OSError:
            pass


def run_program(status_fd: int, main_pid: int, blocked: type[BaseException]) -> None:
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
        report(status_fd, main_pid, "syntax_error", f"{reason}{line}")
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
        report(status_fd, main_pid, kind, detail)
        try:
            import traceback

            frames = exc.__traceback__.tb_next if exc.__traceback__ else None  # without this file's frame
            traceback.print_exception(type(exc), exc, frames)
        except BaseException:  # noqa: S110 - out of memory, most likely; the report above stands
            pass
        sys.exit(1)


if __name__ == "__main__":
    main()
