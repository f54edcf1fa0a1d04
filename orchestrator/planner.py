"""The planner's prompt and parser: a task becomes a subtask DAG, or a clear error.

The model answers with JSON `{"subtasks": [{"id", "text", "depends_on", "primitive"}]}`.
`parse_plan` validates it with pydantic (types, sizes) and the protocol's DAG rules
(unique ids, known dependencies, no cycle, bounded size). A malformed plan gets one
repair prompt (`repair_messages`); if that fails too the caller solves the task directly.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.core.protocol import ProtocolViolation, SubtaskSpec, check_subtasks

MAX_SUBTASKS = 12
PRIMITIVES = (
    "direct",
    "cot",
    "self_consistency",
    "program",
    "tool_use",
    "verify",
    "reflexion",
    "long_context",
)

SYSTEM = f"""You split a task into subtasks that other models will solve.
Reply with JSON only, no prose, in this shape:
{{"subtasks": [{{"id": "s1", "text": "...", "depends_on": [], "primitive": "direct"}}]}}
Rules:
- between 1 and {MAX_SUBTASKS} subtasks; ids are short and unique;
- a subtask lists in depends_on the ids whose answers it needs; independent ones run in parallel;
- no cycles; the last subtask answers the whole task;
- primitive is one of: {", ".join(PRIMITIVES)}."""


class SubtaskIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_.-]+$")
    text: str = Field(min_length=1, max_length=4000)
    depends_on: list[str] = Field(default_factory=list, max_length=MAX_SUBTASKS)
    primitive: str | None = None


class PlanIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    subtasks: list[SubtaskIn] = Field(min_length=1, max_length=MAX_SUBTASKS)


class PlanError(ValueError):
    """The model's plan is not valid; the message says why, for the repair prompt."""


def plan_messages(task: str, feedback: str = "") -> list[dict[str, str]]:
    """The planner's prompt; after a replan, with what went wrong with the last plan."""
    user = f"Task:\n{task}"
    if feedback:
        user += f"\n\nAn earlier plan for this task failed: {feedback}\nPlan differently."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def repair_messages(task: str, reply: str, error: str, feedback: str = "") -> list[dict[str, str]]:
    return [
        *plan_messages(task, feedback),
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"That plan is not valid: {error}\nReply with corrected JSON only."},
    ]


def _json_text(reply: str) -> str:
    """The JSON object in a reply, also when wrapped in a ```json fence or prose."""
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", reply, re.S)
    if fenced:
        return fenced.group(1)
    start, end = reply.find("{"), reply.rfind("}")
    return reply[start : end + 1] if 0 <= start < end else reply


def parse_plan(reply: str) -> tuple[SubtaskSpec, ...]:
    """The subtasks of a valid plan; PlanError says what is wrong otherwise."""
    try:
        data: Any = json.loads(_json_text(reply))
    except json.JSONDecodeError as exc:
        raise PlanError(f"the reply is not JSON ({exc.msg} at position {exc.pos})") from None
    try:
        plan = PlanIn.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise PlanError(f"{where}: {first['msg']}") from None
    specs = tuple(
        SubtaskSpec(
            id=sub.id,
            text=sub.text,
            depends_on=tuple(sub.depends_on),
            primitive=sub.primitive if sub.primitive in PRIMITIVES else None,
        )
        for sub in plan.subtasks
    )
    try:
        check_subtasks(specs, max_subtasks=MAX_SUBTASKS)
    except ProtocolViolation as exc:
        raise PlanError(str(exc)) from None
    return specs
