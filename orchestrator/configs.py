"""Training configs from plain mappings (a JSON file, an API body), checked before any work.

The configs are frozen dataclasses. `from_mapping(cls, mapping)` builds one with pydantic,
which checks every field's type, the ranges the field's annotation gives (`Count`,
`NonNegative`, ...), and refuses keys the dataclass does not have (each config sets
`__pydantic_config__ = STRICT_KEYS`), so a typo is an error rather than a default used
in silence. A check across fields goes in the dataclass's `__post_init__` (`check_order`).
Any problem is one `ConfigError` naming every bad field by its path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

T = TypeVar("T")

STRICT_KEYS = ConfigDict(extra="forbid")

Count = Annotated[int, Field(ge=1)]  # sizes, batch sizes, threads
NonNegativeInt = Annotated[int, Field(ge=0)]  # epochs and iterations (0 skips the stage), limits (0: none)
Seed = Annotated[int, Field(ge=0, lt=2**32)]
NonNegative = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Dropout = Annotated[float, Field(ge=0, lt=1)]


def check_order(config: object, low: str, high: str) -> None:
    """ValueError (a config error naming both fields, under `from_mapping`) when config.low > config.high."""
    lo, hi = getattr(config, low), getattr(config, high)
    if lo > hi:
        raise ValueError(f"{low} ({lo}) must be at most {high} ({hi})")


class ConfigError(ValueError):
    """A config that cannot be used; the message names each bad field."""


def _problem(error: Any) -> str:
    if error["type"] == "unexpected_keyword_argument":
        return "not a known option"
    message: str = error["msg"]
    return message.removeprefix("Value error, ")  # a __post_init__ check's own words


def from_mapping(cls: type[T], mapping: Mapping[str, Any] | None) -> T:
    """`cls` built from `mapping` (None: every default); ConfigError when it does not fit."""
    try:
        config: T = TypeAdapter(cls).validate_python({} if mapping is None else mapping)
    except ValidationError as error:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'the config'}: {_problem(e)}" for e in error.errors()]
        raise ConfigError("; ".join(problems)) from None
    return config
