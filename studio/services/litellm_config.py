"""A pool from a LiteLLM Proxy config's `model_list`, and a pool written back as one.

Each `model_list` entry becomes an endpoint: `model_name` its name, `litellm_params.model` its
litellm model string, `api_base`, the prices (`input_cost_per_token` and
`output_cost_per_token`, in `litellm_params` or `model_info`) per million tokens, and
`model_info.max_input_tokens` its context window. A key written `os.environ/NAME` is read from
the environment when the pool is made and stored encrypted, like any endpoint key; the
endpoint keeps the name (`descriptors.api_key_env`) so that an export writes the same
reference, never the key. Orchestra's own settings ride in `model_info.orchestra`
(`primitives`: the admissible primitives; `descriptors`), which LiteLLM Proxy ignores.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from django.db import transaction

from studio.errors import Conflict, Invalid
from studio.models import Admissibility, ModelEndpoint, ModelPool, Primitive
from studio.services.pools import check_api_base, check_model_string, endpoint_create, pool_create

ENV_REF = "os.environ/"
PRICE_KEYS = ("input_cost_per_token", "output_cost_per_token")
# litellm_params an endpoint holds; any other (rpm, timeout, temperature, ...) is reported as not imported
USED_PARAMS = frozenset({"model", "api_base", "api_key", *PRICE_KEYS})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class ConfigEndpoint:
    """One `model_list` entry, read and checked."""

    name: str
    model: str
    api_base: str = ""
    api_key: str | None = None
    api_key_env: str | None = None
    input_cost_per_mtok: Decimal | None = None
    output_cost_per_mtok: Decimal | None = None
    context_window: int | None = None
    primitives: list[str] = field(default_factory=list)
    descriptors: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # litellm_params not imported


@dataclass
class Imported:
    pool: ModelPool
    endpoints: list[ConfigEndpoint]
    warnings: list[str]


def read_model_list(
    text: str, environ: Mapping[str, str], default_primitives: Sequence[str] = ("direct",)
) -> list[ConfigEndpoint]:
    """The entries of a LiteLLM config (YAML or JSON text); Invalid naming the first bad one,
    e.g. `model_list[2].litellm_params.api_key`."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise Invalid("config", f"The config is not YAML: {exc}") from None
    entries = data.get("model_list") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise Invalid("model_list", "The config has no model_list (a list of {model_name, litellm_params}).")
    read = [_entry(f"model_list[{i}]", raw, environ, default_primitives) for i, raw in enumerate(entries)]
    seen: dict[str, int] = {}
    for entry in read:  # LiteLLM balances over entries that share a name; an endpoint's name is unique
        seen[entry.name] = seen.get(entry.name, 0) + 1
        if seen[entry.name] > 1:
            entry.name = f"{entry.name}-{seen[entry.name]}"
    return read


def _entry(where: str, raw: Any, environ: Mapping[str, str], default_primitives: Sequence[str]) -> ConfigEndpoint:
    if not isinstance(raw, dict):
        raise Invalid(where, f"{where} must be a mapping with model_name and litellm_params.")
    name, params, info = raw.get("model_name"), raw.get("litellm_params"), raw.get("model_info") or {}
    if not isinstance(name, str) or not name.strip():
        raise Invalid(f"{where}.model_name", f"{where}.model_name must be a non-empty string.")
    if not isinstance(params, dict) or not isinstance(info, dict):
        raise Invalid(f"{where}.litellm_params", f"{where} needs litellm_params (and model_info, if any) as mappings.")
    model = params.get("model")
    if not isinstance(model, str) or "*" in model:
        raise Invalid(f"{where}.litellm_params.model", f"{where}.litellm_params.model must name one model.")
    try:
        check_model_string(model)
        check_api_base(str(params.get("api_base") or ""))
    except Invalid as exc:
        raise Invalid(f"{where}.litellm_params.{exc.extra['field']}", f"{where}: {exc.message}") from None
    entry = ConfigEndpoint(name=name.strip()[:100], model=model, api_base=str(params.get("api_base") or ""))
    entry.api_key, entry.api_key_env = _key(f"{where}.litellm_params.api_key", params.get("api_key"), environ)
    for key in PRICE_KEYS:
        value = params.get(key, info.get(key))
        if value is not None:
            setattr(entry, key.replace("_per_token", "_per_mtok"), _per_mtok(f"{where}.litellm_params.{key}", value))
    window = info.get("max_input_tokens", info.get("max_tokens"))
    if window is not None:
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise Invalid(
                f"{where}.model_info.max_input_tokens", f"{where}: max_input_tokens must be a positive integer."
            )
        entry.context_window = window
    own = info.get("orchestra") or {}
    if not isinstance(own, dict) or not isinstance(own.get("descriptors", {}), dict):
        raise Invalid(f"{where}.model_info.orchestra", f"{where}.model_info.orchestra must be a mapping.")
    primitives = own.get("primitives", list(default_primitives))
    if not isinstance(primitives, list) or not all(isinstance(p, str) and p for p in primitives):
        raise Invalid(f"{where}.model_info.orchestra.primitives", f"{where}: primitives must be a list of names.")
    entry.primitives = list(dict.fromkeys(primitives))
    entry.descriptors = dict(own.get("descriptors", {})) | (
        {"api_key_env": entry.api_key_env} if entry.api_key_env else {}
    )
    entry.ignored = sorted(set(params) - USED_PARAMS)
    return entry


def _key(where: str, value: Any, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the key, the environment variable it came from)."""
    if value is None or value == "":
        return None, None
    if not isinstance(value, str):
        raise Invalid(where, f"{where} must be a string, e.g. os.environ/OPENAI_API_KEY.")
    if not value.startswith(ENV_REF):
        return value, None
    name = value.removeprefix(ENV_REF)
    if not _ENV_NAME.fullmatch(name):
        raise Invalid(where, f"{where}: {name!r} is not an environment variable name.")
    if not environ.get(name):
        raise Invalid(where, f"{where} reads the environment variable {name}, which is not set.")
    return environ[name], name


def _per_mtok(where: str, value: Any) -> Decimal:
    try:
        per_token = Decimal(str(value))
    except InvalidOperation:
        per_token = Decimal("NaN")
    if isinstance(value, bool) or not per_token.is_finite() or not 0 <= per_token < 1:
        raise Invalid(where, f"{where} must be dollars per token, at least 0 and under 1, not {value!r}.")
    return (per_token * 1_000_000).quantize(Decimal("0.000001"))


@transaction.atomic
def pool_from_litellm_config(
    *, name: str, text: str, environ: Mapping[str, str], default_primitives: Sequence[str] = ("direct",),
    description: str = "",
) -> Imported:  # fmt: skip
    """A new pool named `name` with an endpoint per entry, each pair of its primitives admissible.
    All or nothing: Invalid (a bad entry, an unknown primitive) or Conflict (the pool exists)."""
    entries = read_model_list(text, environ, default_primitives)
    wanted = {p for entry in entries for p in entry.primitives}
    primitives = {row.name: row for row in Primitive.objects.filter(name__in=wanted)}
    for i, entry in enumerate(entries):
        unknown = [p for p in entry.primitives if p not in primitives]
        if unknown:
            known = ", ".join(Primitive.objects.order_by("name").values_list("name", flat=True))
            raise Invalid(
                f"model_list[{i}].model_info.orchestra.primitives",
                f"Unknown primitive(s) {', '.join(unknown)}; known: {known}.",
            )
    if ModelPool.objects.filter(name=name).exists():
        raise Conflict(f"A pool named {name!r} exists already; choose another name.")
    pool = pool_create(name=name, description=description)
    warnings = []
    for entry in entries:
        endpoint = endpoint_create(
            pool_id=pool.pk, api_key=entry.api_key, name=entry.name, model=entry.model, api_base=entry.api_base,
            input_cost_per_mtok=entry.input_cost_per_mtok, output_cost_per_mtok=entry.output_cost_per_mtok,
            context_window=entry.context_window, descriptors=entry.descriptors,
        )  # fmt: skip
        Admissibility.objects.bulk_create(
            Admissibility(endpoint=endpoint, primitive=primitives[p]) for p in entry.primitives
        )
        if entry.api_key and not entry.api_key_env:
            warnings.append(f"{entry.name}: the config holds its key in plain text (stored encrypted); "
                            "write it os.environ/NAME instead")  # fmt: skip
        if entry.ignored:
            warnings.append(f"{entry.name}: not imported: {', '.join(entry.ignored)}")
    return Imported(pool=pool, endpoints=entries, warnings=warnings)


def litellm_config_of_pool(pool: ModelPool) -> dict[str, Any]:
    """The pool as a LiteLLM Proxy config: a `model_list` of its enabled endpoints. A key is
    written as its `os.environ/NAME` reference, never itself; an endpoint that holds a key with
    no known variable gets `os.environ/<NAME>_API_KEY` (`key_env_name`)."""
    rows = ModelEndpoint.objects.filter(pool=pool, enabled=True).order_by("name")
    allowed = Admissibility.objects.filter(endpoint__pool=pool, allowed=True).select_related("primitive")
    primitives: dict[int, list[str]] = {}
    for row in allowed.order_by("primitive__name"):
        primitives.setdefault(row.endpoint_id, []).append(row.primitive.name)
    entries = []
    for endpoint in rows:
        params: dict[str, Any] = {"model": endpoint.model}
        if endpoint.api_base:
            params["api_base"] = endpoint.api_base
        if endpoint.has_api_key:
            params["api_key"] = ENV_REF + key_env_name(endpoint)
        for key, mtok in zip(PRICE_KEYS, (endpoint.input_cost_per_mtok, endpoint.output_cost_per_mtok), strict=True):
            if mtok is not None:
                params[key] = float(mtok) / 1_000_000
        descriptors = {k: v for k, v in (endpoint.descriptors or {}).items() if k != "api_key_env"}
        info: dict[str, Any] = {"orchestra": {"primitives": primitives.get(endpoint.pk, [])}}
        if descriptors:
            info["orchestra"]["descriptors"] = descriptors
        if endpoint.context_window:
            info["max_input_tokens"] = endpoint.context_window
        entries.append({"model_name": endpoint.name, "litellm_params": params, "model_info": info})
    return {"model_list": entries}


def key_env_name(endpoint: ModelEndpoint) -> str:
    """The environment variable an exported config reads the endpoint's key from."""
    named = (endpoint.descriptors or {}).get("api_key_env")
    if isinstance(named, str) and _ENV_NAME.fullmatch(named):
        return named
    return re.sub(r"[^A-Z0-9_]", "_", endpoint.name.upper()) + "_API_KEY"
