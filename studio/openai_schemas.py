"""The /v1 chat completion request: OpenAI's body plus Orchestra's run options, parsed and
checked (`chat_parse`); a body that breaks a rule is a 400 naming the field, never echoed."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Annotated, Any, Literal

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from studio.openai_errors import OpenAIError
from studio.storable import UnstorableText, check_storable


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, tool_call_id, ...: passed on as sent
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None


class FunctionIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"]
    function: FunctionIn


class ToolChoiceFunction(BaseModel):
    name: str


class ToolChoiceIn(BaseModel):
    type: Literal["function"]
    function: ToolChoiceFunction


class JsonSchemaIn(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    strict: bool | None = None


class ResponseFormatIn(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaIn | None = None


class StreamOptions(BaseModel):
    include_usage: bool | None = None


class ChatIn(BaseModel):
    """OpenAI's request body plus Orchestra's run options; other OpenAI parameters are ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[MessageIn] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    pool: int | str | None = Field(None, description="a pool's id or name")
    cost_preference: float | None = Field(None, ge=0, le=100)
    preset: Literal["cheap", "balanced", "best"] | None = None
    best_of: int = Field(1, ge=1, le=16)
    max_cost_usd: Annotated[Decimal, Field(ge=0, max_digits=16, decimal_places=8)] | None = None
    deadline_s: int | None = Field(None, ge=1, le=86_400)
    decomposable: bool = False
    policy_config: dict[str, Any] | None = None
    checkpoint_id: int | None = Field(None, ge=1, description="the policy checkpoint a learned run loads")
    tools: list[ToolIn] | None = Field(None, max_length=128)
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceIn | None = None
    response_format: ResponseFormatIn | None = None


def chat_parse(request: HttpRequest) -> ChatIn:
    try:
        data = json.loads(request.body)
    except RequestDataTooBig:
        raise OpenAIError(413, "The request body is too large.", code="request_too_large") from None
    except ValueError:
        raise OpenAIError(400, "The request body is not valid JSON.", code="invalid_json") from None
    except RecursionError:
        raise OpenAIError(400, "The request body is nested too deeply.", code="invalid_json") from None
    try:
        check_storable(data)
    except UnstorableText as exc:
        raise OpenAIError(400, str(exc)) from None
    try:
        return ChatIn.model_validate(data)
    except ValidationError as exc:
        # Name the field and the rule, never echo the input.
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        where = f"{field}: " if field else ""
        raise OpenAIError(400, f"Invalid request: {where}{first['msg']}.", param=field) from None
