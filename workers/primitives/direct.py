"""`direct`: one call; the response is the answer."""

from orchestrator.envelope import Envelope
from workers.llm import LLMClient
from workers.primitives.answers import whole
from workers.primitives.base import Params, PrimitiveInput, primitive


@primitive("direct", extract=whole)
def direct(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    completion = llm.complete([{"role": "user", "content": task.prompt}], item_id=task.item_id)
    return Envelope(status="ok", output=completion.text, answer=whole(completion.text))
