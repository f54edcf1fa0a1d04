"""The synthetic pool's replies on the wire: one completion (`Answered`) as a chat.completion
body, or as chat.completion.chunk server-sent events. SYNTHETIC: no model runs here."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.synthetic_answers import Reply

FINGERPRINT = "synthetic-pool"


@dataclass(frozen=True)
class Answered:
    """One completion: which item, whether right, the reply and its usage."""

    model: str
    item_id: str
    right: bool
    reply: Reply
    prompt_tokens: int
    completion_tokens: int
    n: int = 1  # choices, all the same


def completion_body(answered: Answered) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answered.reply.content}
    if answered.reply.tool_calls:
        message["tool_calls"] = _tool_calls(answered.reply.tool_calls)
    finish = "tool_calls" if answered.reply.tool_calls else "stop"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": answered.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": i, "message": message, "finish_reason": finish} for i in range(answered.n)],
        "usage": _usage(answered),
    }


def stream_events(answered: Answered) -> list[bytes]:
    """The completion as chat.completion.chunk server-sent events (one choice)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": answered.model,
        "system_fingerprint": FINGERPRINT,
    }
    reply = answered.reply
    delta: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(_tool_calls(reply.tool_calls))]
    finish = "tool_calls" if reply.tool_calls else "stop"
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": _usage(answered)},
    ]
    return [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


def _tool_calls(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
        }  # fmt: skip
        for i, call in enumerate(calls)
    ]


def _usage(answered: Answered) -> dict[str, int]:
    completion = answered.completion_tokens * answered.n
    return {
        "prompt_tokens": answered.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": answered.prompt_tokens + completion,
    }
