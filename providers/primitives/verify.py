"""`verify`: a critic judges a given answer and returns a verdict."""

import re

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.base import Params, PrimitiveInput, primitive

INSTRUCTION = (
    "You check answers. Given a task and a proposed answer, decide whether the answer is correct. "
    "Give a short reason, then a last line 'VERDICT: correct' or 'VERDICT: incorrect'."
)
_VERDICT = re.compile(r"(?i)verdict\s*[:：]\s*(correct|incorrect|wrong|right)")


def verdict(text: str) -> str | None:
    matches = _VERDICT.findall(text)
    if not matches:
        return None
    return "correct" if matches[-1].lower() in {"correct", "right"} else "incorrect"


@primitive("verify", extract=verdict)
def verify(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    content = f"Task:\n{task.prompt}\n\nProposed answer:\n{task.candidate}"
    messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": content}]
    completion = llm.complete(messages, primitive="verify", item_id=task.item_id)
    found = verdict(completion.text)
    if found is None:
        envelope = Envelope.failure("parse", "The critic gave no 'VERDICT: correct|incorrect' line.")
        envelope.output = completion.text
        return envelope
    return Envelope(status="ok", output=completion.text, answer=found, artifacts={"verdict": found == "correct"})
