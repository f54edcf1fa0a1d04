"""A /v1 chat's conversation around a primitive's own messages, and `direct`'s check of a
response format (providers/conversation.py, providers/primitives/direct.py)."""

from __future__ import annotations

import pytest

from providers.conversation import Conversation
from providers.primitives.direct import format_problem


def test_the_chats_system_messages_go_first_then_its_turns_the_primitives_and_what_followed() -> None:
    chat = Conversation.of(
        {
            "before": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "4"},
            ],
            "after": [{"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
        }
    )
    assert chat is not None
    own = [{"role": "system", "content": "Think step by step."}, {"role": "user", "content": "3+3?"}]
    assert [m["content"] for m in chat.around(own)] == [
        "Be brief.",
        "Think step by step.",
        "2+2?",
        "4",
        "3+3?",
        "sunny",
    ]
    assert chat.passthrough() == {}
    assert Conversation.of({}) is None and Conversation.of(None) is None
    assert Conversation().around(own) == own


def test_tools_and_a_response_format_pass_through() -> None:
    tool = {"type": "function", "function": {"name": "f"}}
    chat = Conversation.of({"tools": [tool], "tool_choice": "required", "response_format": {"type": "json_object"}})
    assert chat is not None
    assert chat.passthrough() == {
        "tools": [tool],
        "tool_choice": "required",
        "response_format": {"type": "json_object"},
    }
    assert Conversation.of({"tool_choice": "auto"}).passthrough() == {}  # type: ignore[union-attr]


SCHEMA = {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object", "required": ["a"]}}}


@pytest.mark.parametrize(
    ("text", "response_format", "problem"),
    [
        ("anything", None, None),
        ("anything", {"type": "text"}, None),
        ('{"a": 1}', {"type": "json_object"}, None),
        ("[1]", {"type": "json_object"}, "it is not a JSON object"),
        ("not json", {"type": "json_object"}, "it is not JSON"),
        ('{"a": 1}', SCHEMA, None),
        ('{"b": 1}', SCHEMA, "'a' is a required property"),
        ("1", {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "nope"}}}, "the schema itself"),
    ],
)
def test_an_answer_is_checked_against_the_response_format(
    text: str, response_format: dict[str, object] | None, problem: str | None
) -> None:
    found = format_problem(text, response_format)
    assert (found is None) if problem is None else (found is not None and problem in found)
