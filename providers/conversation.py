"""A /v1 chat's conversation around its task: what a primitive's model calls carry besides
their own messages.

The task is the chat's last user message; `before` is every message ahead of it (system,
user, assistant, tool) and `after` every one behind it (an assistant's tool calls and the
tools' results, in a tool-calling turn). A call's messages become: the chat's system
messages, then the primitive's own, then `before`, the primitive's other messages (the task,
as the primitive words it), and `after`. `tools`, `tool_choice` and `response_format` go to
the provider untouched (`direct` only: the runtime gives such a chat to `direct` pairs alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class Conversation:
    before: tuple[Message, ...] = ()
    after: tuple[Message, ...] = ()
    tools: tuple[Message, ...] = ()
    tool_choice: Any = None
    response_format: Message | None = None

    @classmethod
    def of(cls, chat: Mapping[str, Any] | None) -> Conversation | None:
        if not chat:
            return None
        return cls(
            before=tuple(chat.get("before") or ()), after=tuple(chat.get("after") or ()),
            tools=tuple(chat.get("tools") or ()), tool_choice=chat.get("tool_choice"),
            response_format=chat.get("response_format"),
        )  # fmt: skip

    def around(self, messages: list[Message]) -> list[Message]:
        """The call's messages with the conversation around them."""
        if not self.before and not self.after:
            return messages
        system = [m for m in (*self.before, *messages) if m.get("role") in ("system", "developer")]
        turns = [m for m in self.before if m.get("role") not in ("system", "developer")]
        own = [m for m in messages if m.get("role") not in ("system", "developer")]
        return [*system, *turns, *own, *self.after]

    def passthrough(self) -> dict[str, Any]:
        """The provider parameters the chat set."""
        params: dict[str, Any] = {}
        if self.tools:
            params["tools"] = list(self.tools)
            if self.tool_choice is not None:
                params["tool_choice"] = self.tool_choice
        if self.response_format is not None:
            params["response_format"] = self.response_format
        return params
