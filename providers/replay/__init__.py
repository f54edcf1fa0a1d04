"""The replay pool: real recorded outcomes served through litellm as `replay/<model>`."""

from __future__ import annotations

import litellm

from providers.replay.provider import Latency, NoRecording, ReplayLLM
from providers.replay.store import MemoryStore, Recording, ReplayStore

PROVIDER = "replay"

__all__ = ["Latency", "MemoryStore", "NoRecording", "Recording", "ReplayLLM", "ReplayStore", "install"]


def install(store: ReplayStore, *, latency: Latency | None = None, seed: int | None = None) -> ReplayLLM:
    """Register `replay/` with litellm, serving from `store` (replaces an earlier one)."""
    handler = ReplayLLM(store, latency=latency, seed=seed)
    others = [item for item in litellm.custom_provider_map if item["provider"] != PROVIDER]
    litellm.custom_provider_map = [*others, {"provider": PROVIDER, "custom_handler": handler}]
    return handler
