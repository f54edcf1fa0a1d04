"""`replay/<model>`: a litellm custom provider that serves real recorded outcomes.

A call names the model (`replay/gpt-4-1106-preview`), and in `metadata` the primitive
and, optionally, the recorded item id. The recording is found by item id when given,
else by the exact text of the last user message. It answers with the recorded
response, usage and cost; the recorded score travels in `_hidden_params["replay"]`.
With no recording it fails: replay never invents an answer.

A call that takes a composite node whole names every part's item (`item_ids`): it answers
each part with the model's recording of it, part by part, at the sum of their usage and
cost, and fails if any part has none. That is the composite evaluation's assumption, no
interference between parts answered in one call (`orchestrator.composite.items`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError

from orchestrator.core.items import composite_answer
from providers.replay.store import Recording, ReplayStore

NO_RECORDING_STATUS = 404


class NoRecording(CustomLLMError):
    pass


@dataclass(frozen=True)
class Latency:
    """Simulated latency: `off`, `recorded` (else `fallback`), `fixed:S`, or `uniform:A,B`."""

    mode: str = "off"
    fallback: str = "off"

    def seconds(self, recording: Recording, rng: random.Random) -> float:
        if self.mode == "recorded":
            if recording.latency_s is not None:
                return recording.latency_s
            return Latency(self.fallback).seconds(recording, rng)
        kind, _, spec = self.mode.partition(":")
        if kind == "fixed":
            return float(spec)
        if kind == "uniform":
            low, high = (float(part) for part in spec.split(","))
            return rng.uniform(low, high)
        return 0.0

    @classmethod
    def parse(cls, text: str) -> Latency:
        """`recorded+uniform:0.2,1.5` means recorded, else uniform between 0.2 and 1.5 s."""
        mode, _, fallback = text.partition("+")
        latency = cls(mode or "off", fallback or "off")
        latency.check()
        return latency

    def check(self) -> None:
        for part in (self.mode, self.fallback):
            kind, _, spec = part.partition(":")
            try:
                if kind == "fixed":
                    float(spec)
                elif kind == "uniform":
                    low, high = (float(x) for x in spec.split(","))
                    assert 0 <= low <= high
                elif part not in {"off", "recorded"}:
                    raise ValueError
            except (ValueError, AssertionError):
                raise ValueError(
                    f"Replay latency {part!r} is not off, recorded, fixed:S or uniform:A,B (0 <= A <= B)."
                ) from None


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # OpenAI content parts
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


class ReplayLLM(CustomLLM):
    def __init__(self, store: ReplayStore, latency: Latency | None = None, seed: int | None = None) -> None:
        super().__init__()
        self.store = store
        self.latency = latency or Latency()
        self.rng = random.Random(seed)  # noqa: S311 - simulated latency, not cryptography

    def lookup(self, model: str, messages: list[dict[str, Any]], metadata: dict[str, Any]) -> Recording:
        primitive = str(metadata.get("primitive") or "direct")
        parts = [str(item) for item in metadata.get("item_ids") or ()]
        if parts:
            return compose([self._find(model, primitive, item, "") for item in parts])
        return self._find(model, primitive, metadata.get("item_id"), last_user_text(messages))

    def _find(self, model: str, primitive: str, item_id: str | None, prompt: str) -> Recording:
        recording = self.store.find(model, primitive, item_id=item_id, prompt=prompt)
        if recording is None:
            what = f"item {item_id!r}" if item_id is not None else f"this prompt ({prompt[:60]!r}…)"
            raise NoRecording(
                status_code=NO_RECORDING_STATUS,
                message=f"No recording for replay/{model} with primitive {primitive!r} and {what}. "
                "Replay serves only recorded outcomes and never invents an answer.",
            )
        return recording

    def _respond(self, recording: Recording, model_response: Any) -> Any:
        model_response.choices[0].message.content = recording.response
        model_response.choices[0].finish_reason = "stop"
        model_response.model = f"replay/{recording.model}"
        model_response.usage = litellm.Usage(
            prompt_tokens=recording.prompt_tokens,
            completion_tokens=recording.completion_tokens,
            total_tokens=recording.prompt_tokens + recording.completion_tokens,
        )
        model_response._hidden_params["response_cost"] = recording.cost_usd
        model_response._hidden_params["replay"] = {
            "source": recording.source,
            "item_id": recording.item_id,
            "primitive": recording.primitive,
            "score": recording.score,
            "cost_usd": recording.cost_usd,
            "response_recorded": recording.response is not None,
            "tokens_recorded": list(recording.tokens_recorded),  # usage holds estimates where False
        }
        if recording.parts:
            model_response._hidden_params["replay"]["parts"] = [
                {"item_id": p.item_id, "score": p.score, "response": p.response} for p in recording.parts
            ]
        return model_response

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        recording = self.lookup(model, messages, _metadata(kwargs))
        delay = self.latency.seconds(recording, self.rng)
        if delay > 0:
            time.sleep(delay)
        return self._respond(recording, kwargs["model_response"])

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        import asyncio

        recording = self.lookup(model, messages, _metadata(kwargs))
        delay = self.latency.seconds(recording, self.rng)
        if delay > 0:
            await asyncio.sleep(delay)
        return self._respond(recording, kwargs["model_response"])


def compose(parts: list[Recording]) -> Recording:
    """One answer to several recorded parts: each part's response in turn, their usage and
    cost summed (unknown if any part's is), the mean of their scores."""
    costs = [p.cost_usd for p in parts]
    latencies = [p.latency_s for p in parts]
    return Recording(
        source=parts[0].source,
        item_id=",".join(p.item_id for p in parts),
        model=parts[0].model,
        primitive=parts[0].primitive,
        response=composite_answer([p.response or "" for p in parts]),
        score=sum(p.score for p in parts) / len(parts),
        prompt_tokens=sum(p.prompt_tokens for p in parts),
        completion_tokens=sum(p.completion_tokens for p in parts),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        latency_s=None if any(t is None for t in latencies) else max(t for t in latencies if t is not None),
        parts=tuple(parts),
    )


def _metadata(kwargs: dict[str, Any]) -> dict[str, Any]:
    params = kwargs.get("litellm_params") or {}
    return dict(params.get("metadata") or {})
