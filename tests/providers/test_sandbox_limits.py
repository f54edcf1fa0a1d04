"""The sandbox against programs that take too much: processes (forks, a fork bomb, a
daemon), wall and CPU time, memory, file size and output, each stopped at its limit, and
nothing left running after. Each test names what it expects."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from providers.sandbox import SandboxLimits, run_python
from tests.providers.sandbox_support import ISOLATION, counts_processes, namespaces


@counts_processes
def test_forks_stop_at_the_process_limit() -> None:
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(500):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    print('limited at', n)\n"
    )

    result = run_python(code, limits=SandboxLimits(processes=8, wall_s=5))

    assert result.status == "ok"
    assert result.stdout.startswith("limited at ")
    assert int(result.stdout.split()[-1]) < 8
    assert result.wall_s < 4  # the sleeping children died with the program, not after 30 s


@counts_processes
def test_a_fork_bomb_is_contained_and_cleaned_up() -> None:
    bomb = (
        "import os\n"
        "print(os.getuid(), flush=True)\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        pass\n"
    )

    result = run_python(bomb, limits=SandboxLimits(wall_s=2))

    assert (result.status, result.error_kind) == ("timeout", "timeout")
    assert result.wall_s < 5
    if ISOLATION.user != "self":
        uid = int(result.stdout.split()[0])
        assert uid != os.geteuid()
        assert _processes_of(uid) == []
    assert run_python("print(1 + 1)").stdout == "2\n"  # the machine is still fine


@namespaces
def test_a_daemon_dies_with_the_program() -> None:
    code = (
        "import os, time\n"
        "print(os.getuid(), flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
    )

    result = run_python(code)

    assert result.status == "ok"
    if ISOLATION.user != "self":
        assert _processes_of(int(result.stdout.split()[0])) == []


def test_an_infinite_loop_times_out() -> None:
    result = run_python("while True:\n    pass", limits=SandboxLimits(wall_s=1, cpu_s=10))

    assert (result.status, result.error_kind, result.exit_code) == ("timeout", "timeout", None)
    assert 1 <= result.wall_s < 3


def test_sleeping_forever_times_out() -> None:
    result = run_python("import time\nprint('start', flush=True)\ntime.sleep(600)", limits=SandboxLimits(wall_s=1))

    assert (result.status, result.error_kind) == ("timeout", "timeout")
    assert result.stdout == "start\n"  # output before the kill is kept


def test_cpu_time_is_limited() -> None:
    result = run_python("while True:\n    pass", limits=SandboxLimits(wall_s=8, cpu_s=1))

    assert (result.status, result.error_kind) == ("error", "cpu")
    assert result.wall_s < 4


def test_a_memory_bomb_is_stopped() -> None:
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))"

    result = run_python(code, limits=SandboxLimits(memory_mb=256))

    assert (result.status, result.error_kind) == ("error", "memory")
    assert "MemoryError" in result.stderr


def test_a_large_file_is_refused() -> None:
    result = run_python("open('big.bin', 'wb').write(b'x' * 3 * 1024 * 1024)", limits=SandboxLimits(file_mb=1))

    assert (result.status, result.error_kind) == ("error", "file_limit")


def test_long_output_is_truncated() -> None:
    result = run_python("print('x' * 50_000)", limits=SandboxLimits(output_chars=1000))

    assert (result.status, result.truncated) == ("ok", True)
    assert result.stdout == "x" * 1000


def test_endless_output_stops_the_program() -> None:
    result = run_python("while True:\n    print('y' * 1000)")

    assert (result.status, result.error_kind, result.truncated) == ("error", "output_limit", True)
    assert len(result.stdout) == SandboxLimits().output_chars
    assert result.wall_s < 5


def _processes_of(uid: int) -> list[int]:
    """Live processes whose real uid is `uid` (/proc/<pid> itself is root's once a process
    has switched uid, so read the status file)."""
    return list(_pids_of(uid))


def _pids_of(uid: int) -> Iterator[int]:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            yield int(pid)
