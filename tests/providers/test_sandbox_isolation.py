"""The sandbox against programs after what is not theirs: files outside their directory, the
repository and home, the worker's environment and a secret planted in it, other processes'
files, and shells. Each test names what it expects."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from providers import sandbox
from providers.sandbox import run_python
from tests.providers.sandbox_support import ISOLATION, namespaces

REPO = Path(__file__).resolve().parents[2]


@namespaces
def test_writes_outside_the_directory_end_nowhere() -> None:
    marker = f"sandbox-probe-{uuid.uuid4().hex}"
    scratch = ["/tmp", "/var/tmp", "/dev/shm"]  # noqa: S108 - the program's private tmpfs there
    targets = [f"{directory}/{marker}" for directory in scratch] + [str(REPO / marker)]
    code = (
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
    )

    result = run_python(code)

    assert result.status == "ok"
    assert f"refused {REPO / marker}" in result.stdout  # the repository is hidden and not writable
    for path in targets:
        assert not os.path.exists(path), path  # /tmp and friends were the program's own tmpfs


@namespaces
def test_the_repository_and_home_are_hidden() -> None:
    # The repository is either an empty mount or, when it lies under /tmp (a CI checkout), gone
    # with the rest of the host's /tmp.
    repo = str(REPO)
    code = (
        f"import os\nprint(os.path.exists({str(REPO / 'pyproject.toml')!r}), "
        f"os.listdir({repo!r}) if os.path.isdir({repo!r}) else [])"
    )

    result = run_python(code)

    assert (result.status, result.stdout) == ("ok", "False []\n")


def test_the_environment_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted")
    code = (
        "import os\n"
        "print(sorted(os.environ))\n"
        "print(dict(os.environ))\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError:\n"
        "        pass\n"
    )

    result = run_python(code)

    assert result.status == "ok"
    assert result.stdout.splitlines()[0] == "['HOME', 'LANG', 'PATH', 'TMPDIR']"
    if ISOLATION.mode != "plain":  # in plain mode /proc shows the worker's own environment
        assert "sk-planted" not in result.stdout
    else:
        assert "sk-planted" not in result.stdout.splitlines()[1]


# --- hostile programs after secrets, other processes, and shells ---

SECRET = f"sk-planted-{uuid.uuid4().hex}"


def _contained(result: sandbox.SandboxResult) -> None:
    """Whatever the program managed to run, nothing secret or private came out."""
    output = result.stdout + result.stderr
    assert SECRET not in output
    assert "[build-system]" not in output and "[project]" not in output  # pyproject.toml's content
    assert "PRIVATE KEY" not in output


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in this (the worker's) environment, where a child would find it if it leaked."""
    monkeypatch.setenv("ORCHESTRA_PLANTED_SECRET", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return SECRET


def test_the_environment_hides_a_planted_secret(planted: str) -> None:
    code = (
        "import os\nprint(dict(os.environ))\nprint(os.getenv('ORCHESTRA_PLANTED_SECRET'))\n"
        "try:\n    print(open('/proc/self/environ', 'rb').read())\nexcept OSError as exc:\n    print(exc)\n"
    )

    result = run_python(code)

    assert result.status == "ok", result.stderr
    assert result.stdout.splitlines()[1] == "None"
    _contained(result)


@namespaces
def test_other_processes_files_are_out_of_reach(planted: str) -> None:
    parent = os.getpid()
    targets = [
        "/proc/1/environ", f"/proc/{parent}/environ", f"/proc/{parent}/cmdline", f"/proc/self/../{parent}/environ",
        f"/proc/{parent}/root{REPO}/pyproject.toml", f"/proc/{parent}/cwd/pyproject.toml",
        "/proc/1/root/proc/1/environ",
        str(REPO / "pyproject.toml"), str(REPO / ".env"), os.path.expanduser("~/.ssh/id_rsa"),
        os.path.expanduser("~/.ssh/id_ed25519"), "/root/.ssh/authorized_keys",
    ]  # fmt: skip
    code = f"""
import os
for path in {targets!r}:
    try:
        print(path, "read", open(path, "rb").read()[:4000])
    except OSError as exc:
        print(path, "refused", type(exc).__name__)
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    try:
        print(pid, open(f"/proc/{{pid}}/environ", "rb").read())
    except OSError:
        pass
print(os.path.exists(os.path.expanduser("~/.ssh")), os.listdir("/proc").count({str(parent)!r}))
"""

    result = run_python(code)

    assert result.status == "ok", result.stderr
    _contained(result)
    assert result.stdout.rstrip().endswith("False 0")  # no ~/.ssh, and the worker's pid is not there
    for path in targets[:8]:
        assert f"{path} read" not in result.stdout or "b''" in result.stdout.split(f"{path} read")[1].split("\n")[0]


@pytest.mark.parametrize(
    "spawn",
    [
        "import subprocess\nprint(subprocess.run(['/bin/sh', '-c', CMD], capture_output=True, text=True).stdout)",
        "import os\nos.system(CMD)",
        "import os\nos.execv('/bin/sh', ['/bin/sh', '-c', CMD])",
        "import pty, sys\nsys.stdout.flush()\npty.spawn(['/bin/sh', '-c', CMD])",
    ],
    ids=["subprocess", "os.system", "os.execv", "pty"],
)
def test_a_shell_runs_inside_the_sandbox(planted: str, spawn: str) -> None:
    command = (
        f"env; cat /proc/1/environ /proc/{os.getpid()}/environ {REPO}/pyproject.toml ~/.ssh/id_rsa 2>&1;"
        " (echo x > /dev/tcp/127.0.0.1/22) 2>&1; id -u; echo shell-ran"
    )
    result = run_python(f"CMD = {command!r}\n{spawn}")

    _contained(result)
    # A shell may start (it is bound by the same limits) or be refused; either way it got nothing.
    if "shell-ran" in result.stdout and ISOLATION.user == "fresh":
        uid = result.stdout.split("shell-ran")[0].strip().splitlines()[-1]
        assert uid.isdigit() and int(uid) != 0
