"""`direct`: one call; the response is the answer.

In a /v1 chat that sets `tools` or `response_format`, they go to the provider untouched: tool
calls come back as the answer `{"tool_calls": [...]}` (OpenAI's shape, which /v1 returns as
`message.tool_calls`), and an answer that breaks the response format fails the attempt
(`parse`), so the policy may try another pair.
"""

import json
from typing import Any

import jsonschema

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import whole
from providers.primitives.base import Params, PrimitiveInput, primitive


@primitive("direct", extract=whole)
def direct(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    passthrough = llm.conversation.passthrough() if llm.conversation is not None else {}
    completion = llm.complete([{"role": "user", "content": task.prompt}], item_id=task.item_id, **passthrough)
    if completion.tool_calls:
        calls = [_openai_call(call) for call in completion.tool_calls]
        answer = json.dumps({"tool_calls": calls})
        return Envelope(status="ok", output=completion.text or answer, answer=answer, artifacts={"tool_calls": calls})
    problem = format_problem(completion.text, passthrough.get("response_format"))
    if problem is not None:
        envelope = Envelope.failure("parse", f"The answer breaks the response_format: {problem}")
        envelope.output = completion.text
        return envelope
    return Envelope(status="ok", output=completion.text, answer=whole(completion.text))


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": str(call.get("id") or ""),
        "type": "function",
        "function": {"name": str(function.get("name") or ""), "arguments": str(function.get("arguments") or "{}")},
    }


def format_problem(text: str, response_format: dict[str, Any] | None) -> str | None:
    """What is wrong with `text` under OpenAI's `response_format`, or None."""
    kind = (response_format or {}).get("type")
    if kind not in ("json_object", "json_schema"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return "it is not JSON"
    if kind == "json_object":
        return None if isinstance(value, dict) else "it is not a JSON object"
    schema = ((response_format or {}).get("json_schema") or {}).get("schema") or {}
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        return f"{where + ': ' if where else ''}{error.message}"[:300]
    except jsonschema.SchemaError as error:
        return f"the schema itself is invalid: {error.message}"[:300]
    return None
