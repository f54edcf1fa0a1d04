"""The result envelope: what every primitive returns, and what the orchestrator observes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["ok", "error", "timeout"]

# Error kinds that may pass if tried again; the others (auth, bad_request, context_length,
# not_found, no_recording, sandbox, parse, cancelled, unknown) are permanent.
TRANSIENT_ERRORS = frozenset({"rate_limit", "server_error", "timeout", "connection"})
# Permanent errors of the endpoint, not of the primitive: its other primitives fail the same way
# (a refused key, an unknown model, a prompt past its context; the other primitives' prompts are
# no shorter than `direct`'s).
ENDPOINT_ERRORS = frozenset({"auth", "not_found", "context_length"})

# What an error kind (providers.llm.classify) means, in words a user acts on.
ERROR_CAUSES = {
    "auth": "the provider refused the key (401/403)",
    "connection": "the endpoint could not be reached",
    "not_found": "the provider does not know the model (404)",
    "rate_limit": "the provider kept refusing for its rate limit (429)",
    "server_error": "the provider failed (5xx)",
    "timeout": "the call timed out",
    "context_length": "the prompt is longer than the model's context",
    "bad_request": "the provider refused the request (400)",
    "no_recording": "no recording answers this prompt",
}


@dataclass
class Envelope:
    status: Status
    output: str = ""
    answer: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error_kind: str | None = None
    error_message: str | None = None
    artifacts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def failure(cls, kind: str, message: str, *, status: Status = "error") -> Envelope:
        return cls(status=status, error_kind=kind, error_message=message)
