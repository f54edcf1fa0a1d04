"""The price table shipped as data/outcomes/prices.json, built only from prices in the data.

PRICE_ORIGINS maps each model, named as in the outcome files, to the file and key its
price is read from: LLMRouter's `default_llm.json` or RouterArena's `cost.json`. A
model that appears in no price list (code-davinci-002, text-davinci-003, the routers
`martian` and `unify`, most RouterBench models) has no entry: its cost stays null.
"""

from __future__ import annotations

import json
from pathlib import Path

from workers.importers import llmrouter, routerarena
from workers.importers.common import Prices

LLMROUTER = "llmrouter/default_llm.json"
ROUTERARENA = "routerarena/cost.json"

PRICE_ORIGINS: dict[str, tuple[str, str]] = {
    # LLMRouter's nine scored models.
    **{
        model: (LLMROUTER, model)
        for model in (
            "qwen2.5-7b-instruct",
            "llama-3.1-8b-instruct",
            "gemma-2-9b-it",
            "mistral-7b-instruct-v0.3",
            "codegemma-7b",
            "llama3-chatqa-1.5-8b",
            "llama3-chatqa-1.5-70b",
            "llama-3.3-nemotron-super-49b-v1",
            "llama-3.1-nemotron-51b-instruct",
        )
    },
    # RouteLLM's Mixtral: LLMRouter lists the same model (mistralai/mixtral-8x7b-instruct-v0.1).
    "mistralai/Mixtral-8x7B-Instruct-v0.1": (LLMROUTER, "mixtral-8x7b-instruct-v0.1"),
    # RouterArena's two models (their cost is recorded; listed for completeness).
    "claude-3-haiku-20240307": (ROUTERARENA, "claude-3-haiku-20240307"),
    "gemini-2.0-flash-001": (ROUTERARENA, "gemini-2.0-flash-001"),
    # OpenAI models of RouterBench, RouteLLM, Reflexion and Program-of-Thoughts, by exact name.
    "gpt-4-1106-preview": (ROUTERARENA, "gpt-4-1106-preview"),
    "gpt-3.5-turbo-1106": (ROUTERARENA, "gpt-3.5-turbo-1106"),
    "gpt-4": (ROUTERARENA, "gpt-4"),
    "gpt-3.5-turbo": (ROUTERARENA, "gpt-3.5-turbo"),
}


def build_prices(shared: Path) -> Prices:
    """The price of each model in PRICE_ORIGINS that its price list has, from the shared data folder."""
    tables = {
        LLMROUTER: llmrouter.prices(shared / "llmrouter"),
        ROUTERARENA: routerarena.prices(shared / "routerarena"),
    }
    return {
        model: tables[origin][key] for model, (origin, key) in sorted(PRICE_ORIGINS.items()) if key in tables[origin]
    }


def write_prices(path: Path, prices: Prices) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(prices, indent=2, sort_keys=True) + "\n", encoding="utf-8")
