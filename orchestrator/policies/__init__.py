"""Policies: `act(observation) -> action` (`orchestrator.core.policy.Policy`), found by name in
the registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orchestrator.core.policy import Policy

PolicyFactory = Callable[[Mapping[str, Any]], Policy]
REGISTRY: dict[str, PolicyFactory] = {}

# Named cost preferences λ: the price of cost, in units of the pool's most expensive pair
# (0 = accuracy only). A request carries one of these names or a λ of its own.
COST_PRESETS = {"best": 0.0, "balanced": 0.05, "cheap": 1.0}


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

    REGISTRY.setdefault("learned", _learned)


def _learned(config: Mapping[str, Any]) -> Policy:
    """The learned policy, imported on first use (it loads torch)."""
    from orchestrator.policies.learned import make_learned

    return make_learned(config)
