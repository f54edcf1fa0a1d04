"""`cot`: think step by step, then a final answer that is extracted."""

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import final_answer
from providers.primitives.base import Params, PrimitiveInput, primitive

INSTRUCTION = "Think step by step. Finish with a last line of the form 'Answer: <final answer>'."


def cot_messages(task: PrimitiveInput) -> list[dict[str, str]]:
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": task.prompt}]


@primitive("cot", extract=final_answer)
def cot(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    completion = llm.complete(cot_messages(task), primitive="cot", item_id=task.item_id)
    return Envelope(status="ok", output=completion.text, answer=final_answer(completion.text))
