"""Policies: `act(observation) -> action`, found by name in the registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from orchestrator.protocol import Action, Observation


class Policy(Protocol):
    name: str

    def act(self, observation: Observation) -> Action: ...


PolicyFactory = Callable[[Mapping[str, Any]], Policy]
REGISTRY: dict[str, PolicyFactory] = {}


def register(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def add(factory: PolicyFactory) -> PolicyFactory:
        REGISTRY[name] = factory
        return factory

    return add


def make_policy(name: str, config: Mapping[str, Any] | None = None) -> Policy:
    """The policy registered as `name`; KeyError names the known ones."""
    _load_builtin()
    if name not in REGISTRY:
        raise KeyError(f"Unknown policy {name!r}; known: {', '.join(sorted(REGISTRY))}.")
    return REGISTRY[name](config or {})


def policy_names() -> list[str]:
    _load_builtin()
    return sorted(REGISTRY)


def _load_builtin() -> None:
    from orchestrator.policies import default  # noqa: F401 - registers itself
