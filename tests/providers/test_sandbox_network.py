"""The sandbox against programs after the network: every way to a socket (the socket module,
its C module under other names, ctypes, a shell) is refused, also in the plain fallback
without namespaces, and asyncio still works. Each test names what it expects."""

from __future__ import annotations

import os
import socket

import pytest

from providers import sandbox
from providers.sandbox import Isolation, SandboxLimits, run_python
from tests.providers.sandbox_support import ISOLATION


def test_no_socket_reaches_a_listener_on_localhost() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0)
        port = listener.getsockname()[1]
        code = f"""
import ctypes, subprocess
def plain():
    import socket
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
def dunder_import():
    s = __import__("socket")
    s.socket(s.AF_INET, s.SOCK_STREAM).connect(("127.0.0.1", {port}))
def original_class():  # step around the Python-level block: the kernel still refuses
    import _socket
    type.mro(_socket.socket)[1](2, 1).connect(("127.0.0.1", {port}))
def libc():
    fd = ctypes.CDLL(None, use_errno=True).socket(2, 1, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket() refused")
def shell():
    done = subprocess.run(["/bin/bash", "-c", "echo hi > /dev/tcp/127.0.0.1/{port}"], capture_output=True)
    if done.returncode:
        raise OSError(done.returncode, "bash could not connect")
for attempt in (plain, dunder_import, original_class, libc, shell):
    try:
        attempt()
        print(attempt.__name__, "connected")
    except Exception as exc:
        print(attempt.__name__, "failed", type(exc).__name__)
"""
        result = run_python(code)
        with pytest.raises(BlockingIOError):
            listener.accept()

    assert result.status == "ok"
    assert "connected" not in result.stdout
    assert result.stdout.count("failed") == 5


def test_an_uncaught_network_attempt_is_reported_as_blocked() -> None:
    result = run_python("import socket\nsocket.create_connection(('127.0.0.1', 80))")

    assert (result.status, result.error_kind) == ("error", "blocked")
    assert "network access is disabled" in result.stderr


def test_asyncio_still_works_without_the_network() -> None:
    result = run_python("import asyncio\nasync def main():\n    return 42\nprint(asyncio.run(main()))")

    assert (result.status, result.stdout) == ("ok", "42\n")


def test_the_plain_fallback_still_blocks_sockets_and_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "isolation", lambda: Isolation("plain"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted")

    blocked = run_python("import socket\nsocket.create_connection(('127.0.0.1', 80))")
    looping = run_python("while True:\n    pass", limits=SandboxLimits(wall_s=1))
    env = run_python("import os\nprint(dict(os.environ))")

    assert (blocked.status, blocked.error_kind) == ("error", "blocked")
    assert (looping.status, looping.error_kind) == ("timeout", "timeout")
    assert env.status == "ok" and "sk-planted" not in env.stdout


def test_ctypes_cannot_open_a_socket_and_its_forks_are_bounded() -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("socket", libc.socket(2, 1, 0), libc.socket(10, 1, 0), libc.socket(1, 1, 0))
print("syscall", libc.syscall(41, 2, 1, 0))  # socket(2) by number
forks = 0
for _ in range(60):
    pid = libc.fork()
    if pid == 0:
        libc.sleep(3)
        os._exit(0)
    if pid < 0:
        break
    forks += 1
print("forks", forks)
"""
    result = run_python(code, limits=SandboxLimits(processes=16, wall_s=10))

    assert result.status == "ok", result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["socket"] == "-1 -1 -1"
    if ISOLATION.seccomp:
        assert lines["syscall"] == "-1"
    if not (os.geteuid() == 0 and ISOLATION.user == "self"):
        assert int(lines["forks"]) < 16


def test_socket_under_another_name_is_still_refused() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0)
        port = listener.getsockname()[1]
        code = f"""
import importlib, sys
ADDRESS = ("127.0.0.1", {port})
def concatenated():
    m = __import__("so" + "cket")
    m.socket(m.AF_INET, m.SOCK_STREAM).connect(ADDRESS)
def via_importlib():
    m = importlib.import_module("".join(["s", "o", "c", "k", "e", "t"]))
    m.create_connection(ADDRESS, timeout=2)
def private_module():
    import _socket
    _socket.socket(2, 1).connect(ADDRESS)
def from_sys_modules():
    __import__("_socket")
    sys.modules["_socket"].SocketType(2, 1).connect(ADDRESS)
def reloaded():
    import _socket
    importlib.reload(_socket).socket(2, 1).connect(ADDRESS)
def fresh_spec():  # a second copy of the C module, not the patched one
    import importlib.util, _socket
    spec = importlib.util.find_spec("_socket")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.socket(2, 1).connect(ADDRESS)
def original_class():
    import _socket
    _socket.socket.__mro__[1](2, 1).connect(ADDRESS)
def from_fd():
    import socket
    socket.fromfd(0, 2, 1).connect(ADDRESS)
ATTEMPTS = (concatenated, via_importlib, private_module, from_sys_modules, reloaded, fresh_spec, original_class)
for attempt in (*ATTEMPTS, from_fd):
    try:
        attempt()
        print(attempt.__name__, "connected")
    except Exception as exc:
        print(attempt.__name__, "failed", type(exc).__name__, exc)
"""
        result = run_python(code)
        with pytest.raises(BlockingIOError):
            listener.accept()

    assert result.status == "ok", result.stderr
    assert "connected" not in result.stdout
    assert result.stdout.count(" failed ") == 8, result.stdout
