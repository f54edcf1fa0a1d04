"""`plan`: ask a model for a subtask DAG (orchestrator.planner), with one repair prompt."""

import json

from orchestrator.core.envelope import Envelope
from orchestrator.core.protocol import plan_to_json
from orchestrator.planner import PlanError, parse_plan, plan_messages, repair_messages
from providers.llm import LLMClient
from providers.primitives.base import Params, PrimitiveInput, primitive


def _plan_answer(text: str) -> str | None:
    try:
        return json.dumps(plan_to_json(parse_plan(text)))
    except PlanError:
        return None


@primitive("plan", extract=_plan_answer)
def plan(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    first = llm.complete(plan_messages(task.prompt, task.feedback), primitive="plan", item_id=task.item_id)
    try:
        specs = parse_plan(first.text)
        repaired = False
    except PlanError as error:
        second = llm.complete(repair_messages(task.prompt, first.text, str(error), task.feedback), primitive="plan")
        try:
            specs = parse_plan(second.text)
            repaired = True
        except PlanError as again:
            envelope = Envelope.failure("parse", f"The planner's plan was invalid twice: {error}; then {again}.")
            envelope.output = second.text
            envelope.artifacts = {"first_error": str(error), "second_error": str(again)}
            return envelope
    subtasks = plan_to_json(specs)
    return Envelope(
        status="ok",
        output=json.dumps(subtasks),
        answer=json.dumps(subtasks),
        artifacts={"plan": subtasks, "repaired": repaired},
    )
