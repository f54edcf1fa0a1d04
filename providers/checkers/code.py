"""HumanEval and MBPP: run the candidate and the unit tests together in the sandbox."""

from __future__ import annotations

import re
import secrets
from typing import Any

from providers.checkers.result import CheckResult
from providers.sandbox import SandboxLimits, run_python

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_FUTURE = re.compile(r"^from __future__ import [^\n]*\n?", re.MULTILINE)


def check_code(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """Passed when every test passes. `gold` is the tests: a HumanEval/MBPP `test` string
    (`def check(candidate)`, called here unless the string calls it itself) or a list of
    assert statements. `item` gives `entry_point` and `prompt` (for body-only completions)
    and optionally `timeout_s`."""
    item = item or {}
    entry_point = str(item.get("entry_point") or "")
    candidate = candidate_code(answer, entry_point)
    if not candidate.strip():
        return CheckResult.of(False, "no code in the answer")
    marker = f"all-tests-passed-{secrets.token_hex(8)}"
    program = test_program(candidate, gold, entry_point=entry_point, prompt=str(item.get("prompt") or ""))
    limits = SandboxLimits(wall_s=float(item.get("timeout_s", 10)))
    result = run_python(f"{program}\n_sandbox_os.write(_sandbox_stdout, b'{marker}\\n')\n", limits=limits)
    if result.ok and marker in result.stdout:
        return CheckResult.of(True, "all tests passed")
    if result.ok:
        return CheckResult.of(False, "the program stopped before the tests finished")
    return CheckResult.of(False, _failure_reason(result.stderr, result.error_message))


def candidate_code(answer: str, entry_point: str = "") -> str:
    """The code in a reply: the fenced block that defines `entry_point`, else the first
    fenced block, else the reply itself."""
    blocks = _FENCE.findall(answer)
    for block in blocks:
        if entry_point and re.search(rf"def\s+{re.escape(entry_point)}\s*\(", block):
            return str(block)
    return str(blocks[0]) if blocks else answer


def test_program(candidate: str, tests: Any, *, entry_point: str = "", prompt: str = "") -> str:
    """One program: the candidate (completing `prompt` when it is only a function body), then
    the tests. The candidate's own printing goes to /dev/null, so that nothing it prints can
    push the final marker out of the kept output."""
    defines = entry_point and re.search(rf"^def\s+{re.escape(entry_point)}\s*\(", candidate, re.MULTILINE)
    solution = candidate if defines or not prompt else prompt + candidate
    if defines and prompt:  # keep the prompt's imports and helpers; the candidate redefines the function
        body = "    pass\n" if prompt.rstrip().endswith(":") else ""
        solution = f"{prompt}\n{body}\n{candidate}"
    test_code = "\n".join(map(str, tests)) if isinstance(tests, list | tuple) else str(tests)
    if entry_point and "def check(" in test_code and not re.search(r"^\s*(?:test_)?check\(", test_code, re.M):
        test_code += f"\n\ncheck({entry_point})\n"
    futures = "".join(_FUTURE.findall(solution))
    header = (
        "import os as _sandbox_os\n"
        "_sandbox_stdout = _sandbox_os.dup(1)\n"
        "_sandbox_os.dup2(_sandbox_os.open(_sandbox_os.devnull, _sandbox_os.O_WRONLY), 1)\n"
    )
    return f"{futures}{header}\n{_FUTURE.sub('', solution)}\n\n{test_code}\n"


def _failure_reason(stderr: str, message: str | None) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if last.startswith("AssertionError"):
        where = [line for line in lines if line.startswith("assert ")]
        return f"a test failed: {where[-1] if where else last}"[:300]
    return (last or message or "the tests failed")[:300]
