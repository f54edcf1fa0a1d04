"""`program`: the model writes Python, the sandbox runs it, the printed result is the answer."""

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import code_block
from providers.primitives.base import Params, PrimitiveInput, primitive
from providers.sandbox import SandboxLimits, run_python

INSTRUCTION = (
    "Solve the task by writing a Python program that prints only the final answer. "
    "Reply with one ```python code block and nothing else."
)


def last_printed_line(stdout: str) -> str | None:
    lines = [line.strip() for line in stdout.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None


def recorded_program_answer(output: str) -> str | None:
    """A recorded program (Program-of-Thoughts style: it leaves its result in `ans`) is run
    in the sandbox, and what it prints is the answer. None when it does not run."""
    code = code_block(output)
    if "print(" not in code:
        code += "\ntry:\n    print(ans)\nexcept NameError:\n    pass\n"
    result = run_python(code, limits=SandboxLimits(wall_s=5))
    return last_printed_line(result.stdout) if result.status == "ok" else None


@primitive("program", extract=recorded_program_answer)
def program(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": task.prompt}]
    completion = llm.complete(messages, primitive="program", item_id=task.item_id)
    code = code_block(completion.text)
    result = run_python(code, limits=SandboxLimits(wall_s=float(params.get("timeout_s", 10))))
    artifacts = {"code": code, "stdout": result.stdout, "stderr": result.stderr, "sandbox_s": result.wall_s}
    if result.status != "ok":
        envelope = Envelope.failure("sandbox", result.error_message or "The program failed.")
        envelope.output, envelope.artifacts = completion.text, artifacts
        return envelope
    return Envelope(status="ok", output=result.stdout, answer=last_printed_line(result.stdout), artifacts=artifacts)


# The same primitive without few-shot examples; recorded separately (Program-of-Thoughts).
primitive("program_zero_shot", extract=recorded_program_answer)(program)
