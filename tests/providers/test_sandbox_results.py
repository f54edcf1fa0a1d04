"""The sandbox against ordinary programs: what a run reports (its output, exit status,
syntax errors and exceptions, input it refuses), that it leaves no temporary directory
behind, and that a trivial program is fast. Each test names what it expects."""

from __future__ import annotations

import os
import statistics
import tempfile

import pytest

from providers import sandbox
from providers.sandbox import run_python


def test_runs_a_program_with_stdin() -> None:
    result = run_python("name = input()\nprint(f'hello {name}', 6 * 7)", stdin="ada\n")

    assert (result.status, result.error_kind, result.exit_code) == ("ok", None, 0)
    assert result.stdout == "hello ada 42\n"
    assert not result.truncated


def test_the_program_sees_its_files_and_can_import_them() -> None:
    files = {"data/input.txt": "3 4\n", "helper.py": "def add(a, b):\n    return a + b\n"}
    code = "from helper import add\na, b = map(int, open('data/input.txt').read().split())\nprint(add(a, b))"

    result = run_python(code, files=files)

    assert (result.status, result.stdout) == ("ok", "7\n")


def test_a_syntax_error_is_reported_as_such() -> None:
    result = run_python("print('fine')\ndef broken(:\n    pass\n")

    assert (result.status, result.error_kind) == ("error", "syntax_error")
    assert "line 2" in (result.error_message or "")
    assert "SyntaxError" in result.stderr
    assert result.stdout == ""


def test_an_uncaught_exception_is_an_error_with_its_traceback() -> None:
    result = run_python("print('before')\nraise ValueError('bad input')")

    assert (result.status, result.error_kind, result.exit_code) == ("error", "exception", 1)
    assert result.error_message == "The program raised ValueError: bad input."
    assert result.stdout == "before\n"
    assert 'main.py", line 2' in result.stderr


def test_exit_status_is_kept() -> None:
    ok = run_python("exit(0)")
    failed = run_python("import sys\nsys.exit(3)")

    assert (ok.status, ok.exit_code) == ("ok", 0)
    assert (failed.status, failed.error_kind, failed.exit_code) == ("error", "nonzero_exit", 3)


def test_bad_file_names_are_refused_without_running() -> None:
    for name in ("../escape.txt", "/etc/passwd", "main.py"):
        result = run_python("print(1)", files={name: "x"})
        assert (result.status, result.error_kind) == ("error", "invalid_input"), name


def test_the_temporary_directory_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(**kwargs: str) -> str:
        made.append(mkdtemp(**kwargs))
        return made[-1]

    monkeypatch.setattr(sandbox.tempfile, "mkdtemp", recording_mkdtemp)
    code = "import os\nos.makedirs('a/b')\nopen('a/b/c.txt', 'w').write('x')\nos.chmod('a', 0)\nprint('ok')"

    result = run_python(code, files={"given.txt": "input"})

    assert (result.status, result.stdout) == ("ok", "ok\n")
    assert len(made) == 1
    assert not os.path.exists(made[0])


def test_a_trivial_program_is_fast() -> None:
    times = [run_python("print(1 + 1)").wall_s for _ in range(9)]

    assert statistics.median(times) < 0.5  # about 0.02 s here; a regression would be obvious
