"""The synthetic pool's config: its made-up models (an accuracy per domain and prices), the
default four, reading and writing it as JSON, and the pool as a LiteLLM Proxy config.
SYNTHETIC: no model runs here (`workers.synthetic_pool` serves it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.outcomes import DOMAINS

KEY_ENV = "SYNTHETIC_POOL_KEY"  # the variable the LiteLLM config reads a key from


@dataclass(frozen=True)
class SyntheticModel:
    name: str
    accuracy: dict[str, float]  # domain -> the share of its items answered right
    input_cost_per_mtok: float  # dollars per million prompt tokens
    output_cost_per_mtok: float  # dollars per million completion tokens
    default_accuracy: float = 0.5  # on a domain `accuracy` does not name

    def accuracy_on(self, domain: str) -> float:
        return self.accuracy.get(domain, self.default_accuracy)


@dataclass(frozen=True)
class PoolConfig:
    models: tuple[SyntheticModel, ...]
    seed: int = 0  # another seed, other items right
    latency_s: float = 0.0  # each completion is answered after this long


# Four models that differ per domain: a specialist for math, one for code (and tools), a cheap
# weak one, and a strong dear one. A router that sends each domain to its specialist beats the
# strong model's accuracy at a fraction of its cost. Domains of the benchmarks: math (gsm8k,
# math500), code (humaneval, mbpp), multi_hop (hotpotqa), tool_use (bfcl).
DEFAULT_CONFIG = PoolConfig(
    models=(
        SyntheticModel("synthetic-math", {"math": 0.9, "code": 0.4, "multi_hop": 0.6, "tool_use": 0.5}, 0.5, 1.5),
        SyntheticModel("synthetic-code", {"math": 0.5, "code": 0.9, "multi_hop": 0.5, "tool_use": 0.8}, 0.5, 1.5),
        SyntheticModel("synthetic-small", {"math": 0.3, "code": 0.25, "multi_hop": 0.35, "tool_use": 0.4}, 0.05, 0.2),
        SyntheticModel("synthetic-large", {"math": 0.8, "code": 0.8, "multi_hop": 0.8, "tool_use": 0.8}, 5.0, 15.0),
    )
)


def read_config(path: Path) -> PoolConfig:
    """A pool config from JSON (`--print-config` writes the default's); ValueError naming the problem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    return config_from_dict(data)


def config_from_dict(data: Any) -> PoolConfig:
    if not isinstance(data, dict) or not isinstance(data.get("models"), list) or not data["models"]:
        raise ValueError('a pool config is an object with "models": a non-empty list')
    models = []
    for index, raw in enumerate(data["models"]):
        try:
            model = SyntheticModel(
                name=str(raw["name"]),
                accuracy={str(k): float(v) for k, v in raw["accuracy"].items()},
                input_cost_per_mtok=float(raw["input_cost_per_mtok"]),
                output_cost_per_mtok=float(raw["output_cost_per_mtok"]),
                default_accuracy=float(raw.get("default_accuracy", 0.5)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"models[{index}]: needs name, accuracy {{domain: share}} and both prices ({exc})"
            ) from None
        unknown = sorted(set(model.accuracy) - set(DOMAINS))
        if unknown:
            raise ValueError(f"models[{index}]: unknown domain(s) {', '.join(unknown)}; use {', '.join(DOMAINS)}")
        shares = [*model.accuracy.values(), model.default_accuracy]
        if not all(0 <= share <= 1 for share in shares):
            raise ValueError(f"models[{index}]: an accuracy is outside 0 to 1")
        models.append(model)
    names = [model.name for model in models]
    if len(set(names)) < len(names):
        raise ValueError("two models share a name")
    return PoolConfig(models=tuple(models), seed=int(data.get("seed", 0)), latency_s=float(data.get("latency_s", 0.0)))


def litellm_config(config: PoolConfig, base_url: str, primitives: Sequence[str] = ("direct",)) -> dict[str, Any]:
    """The pool as a LiteLLM Proxy config (`manage.py import_litellm_config` makes a studio pool
    of it): each model at `base_url` with its prices, the key read from `SYNTHETIC_POOL_KEY`
    (any value: the pool checks none)."""
    return {
        "model_list": [
            {
                "model_name": model.name,
                "litellm_params": {
                    "model": f"openai/{model.name}",
                    "api_base": base_url,
                    "api_key": f"os.environ/{KEY_ENV}",
                    "input_cost_per_token": model.input_cost_per_mtok / 1e6,
                    "output_cost_per_token": model.output_cost_per_mtok / 1e6,
                },
                "model_info": {"orchestra": {"primitives": list(primitives), "descriptors": {"synthetic": True}}},
            }  # fmt: skip
            for model in config.models
        ]
    }


def config_to_dict(config: PoolConfig) -> dict[str, Any]:
    return {"seed": config.seed, "latency_s": config.latency_s, "models": [asdict(model) for model in config.models]}
