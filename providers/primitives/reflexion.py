"""`reflexion`: generate code, run the tests, reflect on the failure, retry (up to n tries)."""

from __future__ import annotations

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import code_block
from providers.primitives.base import Params, PrimitiveInput, primitive
from providers.sandbox import SandboxLimits, SandboxResult, run_python

INSTRUCTION = "Write a correct Python implementation. Reply with one ```python code block."
REFLECT = (
    "Your implementation failed the tests:\n{feedback}\n\n"
    "Reflect in a few sentences on what went wrong, then reply with a corrected ```python code block."
)


def test_program(code: str, tests: str, entry_point: str) -> str:
    """The candidate, then the tests; HumanEval-style tests define `check(candidate)`."""
    call = f"\ncheck({entry_point})\n" if entry_point and "def check(" in tests else "\n"
    return f"{code}\n\n{tests}{call}"


def feedback(result: SandboxResult) -> str:
    return (result.stderr or result.stdout or result.error_message or "the tests failed")[-2000:]


@primitive("reflexion", extract=code_block)
def reflexion(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    max_tries = int(params.get("max_tries", 3))
    if not task.tests:
        return Envelope.failure("bad_request", "reflexion needs unit tests to run (none were given).")
    messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": task.prompt}]
    history: list[dict[str, object]] = []
    code, text = "", ""
    for attempt in range(1, max_tries + 1):
        completion = llm.complete(messages, primitive="reflexion", item_id=task.item_id)
        text, code = completion.text, code_block(completion.text)
        result = run_python(test_program(code, task.tests, task.entry_point), limits=SandboxLimits(wall_s=10))
        passed = result.status == "ok"
        history.append({"try": attempt, "passed": passed, "feedback": "" if passed else feedback(result)})
        if passed:
            break
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": REFLECT.format(feedback=feedback(result))},
        ]
    passed = bool(history[-1]["passed"])
    return Envelope(status="ok", output=text, answer=code, artifacts={"tries": history, "tests_passed": passed})
