"""`aggregate`: compose the answers of a decomposed node's parts into its answer, with a model.

The prompt is the engine's for an aggregate node (`orchestrator.core.actions.request`): the
task, then each part's text and answer. A composite of recorded items never comes here: its
answer stays part by part (`policies.default`).
"""

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import whole
from providers.primitives.base import Params, PrimitiveInput, primitive

SYSTEM = (
    "You compose the final answer to a task from the answers to its subtasks. "
    "Use them as given; reply with the final answer only."
)


@primitive("aggregate", extract=whole)
def aggregate(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.prompt}]
    completion = llm.complete(messages, primitive="aggregate", item_id=task.item_id)
    return Envelope(status="ok", output=completion.text, answer=whole(completion.text))
