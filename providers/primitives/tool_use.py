"""`tool_use`: a ReAct-style loop with OpenAI function calling.

Built-in tools: `calculator` and `python` (the sandbox). A task may add its own
function schemas (e.g. BFCL); the model's calls to those are the answer, as JSON.
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.core.envelope import Envelope
from providers.llm import LLMClient
from providers.primitives.answers import final_answer
from providers.primitives.base import Params, PrimitiveInput, primitive
from providers.primitives.calculator import CalculatorError, calculate
from providers.sandbox import SandboxLimits, run_python

INSTRUCTION = (
    "Solve the task. Use the tools when they help. When you are done, reply without a tool call, "
    "ending with a last line 'Answer: <final answer>'."
)
BUILTIN_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression, e.g. '3 * (4 + 5) / sqrt(2)'.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "python",
            "description": "Run a Python program in a sandbox and return what it prints.",
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string"}},
                "required": ["code"],
            },
        },
    },
]
BUILTIN_NAMES = {"calculator", "python"}


def _as_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """Accept either {"type": "function", "function": {...}} or a bare function schema."""
    return schema if schema.get("type") == "function" else {"type": "function", "function": schema}


def run_builtin(name: str, arguments: dict[str, Any]) -> str:
    if name == "calculator":
        try:
            return str(calculate(str(arguments.get("expression", ""))))
        except CalculatorError as exc:
            return f"error: {exc}"
    result = run_python(str(arguments.get("code", "")), limits=SandboxLimits(wall_s=10))
    if result.status != "ok":
        return f"error: {result.error_message}\n{result.stderr[-2000:]}"
    return result.stdout[-4000:]


def _calls(completion_calls: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(id, name, arguments or None when they are not valid JSON) per tool call."""
    parsed = []
    for call in completion_calls:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = None
        parsed.append((str(call.get("id")), str(function.get("name")), arguments))
    return parsed


@primitive("tool_use", extract=final_answer)
def tool_use(llm: LLMClient, task: PrimitiveInput, params: Params) -> Envelope:
    max_steps = int(params.get("max_steps", 6))
    tools = [*BUILTIN_TOOLS, *(_as_tool(schema) for schema in task.tools)]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTION},
        {"role": "user", "content": task.prompt},
    ]
    trace: list[dict[str, Any]] = []
    for _ in range(max_steps):
        completion = llm.complete(messages, primitive="tool_use", item_id=task.item_id, tools=tools)
        calls = _calls(completion.tool_calls)
        if not calls:
            return Envelope(
                status="ok",
                output=completion.text,
                answer=final_answer(completion.text),
                artifacts={"trace": trace},
            )
        external = [(name, args) for _, name, args in calls if name not in BUILTIN_NAMES]
        if external:
            # Calls to the task's own functions are the answer (function calling, e.g. BFCL).
            answer = json.dumps([{"name": name, "arguments": args} for name, args in external])
            trace.append({"calls": [{"name": n, "arguments": a} for n, a in external]})
            return Envelope(status="ok", output=answer, answer=answer, artifacts={"trace": trace})
        messages.append({"role": "assistant", "content": completion.text or None, "tool_calls": completion.tool_calls})
        for call_id, name, arguments in calls:
            result = "error: the arguments are not valid JSON" if arguments is None else run_builtin(name, arguments)
            trace.append({"tool": name, "arguments": arguments, "result": result[:1000]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    envelope = Envelope.failure("parse", f"No final answer after {max_steps} tool steps.")
    envelope.artifacts = {"trace": trace}
    return envelope
