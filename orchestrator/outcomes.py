"""The canonical format for recorded outcomes: one record per (item, model, primitive).

Every source (RouterBench, LLMRouter, RouteLLM, RouterArena, BBH, Reflexion,
Program-of-Thoughts) is converted into JSON Lines, gzip-compressed, with these fields
(docs/workers.md, "Recorded outcomes"). The evaluation reads these files directly; the
studio loads them into Postgres with `manage.py import_outcomes`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

DOMAINS = ("math", "code", "knowledge", "reasoning", "multi_hop", "long_context", "tool_use", "chat")
CHARS_PER_TOKEN = 4

Split = Literal["train", "test"]


class OutcomeFormatError(ValueError):
    """A line that is not a valid canonical record; the message names the line."""


@dataclass(frozen=True)
class OutcomeRecord:
    source: str
    item_id: str
    split: Split | None
    benchmark: str
    domain: str
    prompt: str
    gold: str | None
    model: str
    primitive: str
    response: str | None
    score: float
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float | None

    def check(self) -> None:
        """Raise ValueError naming the first field that breaks the format."""
        for name in ("source", "item_id", "benchmark", "model", "primitive"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string")
        if not isinstance(self.prompt, str):
            raise ValueError("prompt must be a string")
        if self.split not in (None, "train", "test"):
            raise ValueError(f"split must be train, test or null, not {self.split!r}")
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {', '.join(DOMAINS)}, not {self.domain!r}")
        if isinstance(self.score, bool) or not isinstance(self.score, int | float) or not 0 <= self.score <= 1:
            raise ValueError(f"score must be a number in [0, 1], not {self.score!r}")
        for name in ("prompt_tokens", "completion_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer or null")
        for name in ("cost_usd", "latency_s"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
                raise ValueError(f"{name} must be a non-negative number or null")

    @property
    def tokens_in(self) -> int:
        """The recorded prompt tokens, else estimated from the prompt."""
        return self.prompt_tokens if self.prompt_tokens is not None else estimate_tokens(self.prompt)

    @property
    def tokens_out(self) -> int:
        """The recorded completion tokens, else estimated from the response."""
        return self.completion_tokens if self.completion_tokens is not None else estimate_tokens(self.response)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


FIELD_NAMES = tuple(f.name for f in fields(OutcomeRecord))


def record_from_dict(data: dict[str, Any]) -> OutcomeRecord:
    missing = [name for name in FIELD_NAMES if name not in data]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)}")
    record = OutcomeRecord(**{name: data[name] for name in FIELD_NAMES})
    record.check()
    return record


def _open_text(path: Path, mode: str) -> Any:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return path.open(mode, encoding="utf-8")


def read_outcomes(path: str | Path) -> Iterator[OutcomeRecord]:
    """Yield the records of a .jsonl or .jsonl.gz file; a bad line, or a file that cannot be
    read as UTF-8 text (a .gz that is not gzip, or is cut short), raises OutcomeFormatError."""
    path = Path(path)
    try:
        with _open_text(path, "r") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield record_from_dict(json.loads(line))
                except (ValueError, TypeError) as exc:
                    raise OutcomeFormatError(f"{path}:{number}: {exc}") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        raise OutcomeFormatError(f"{path}: cannot be read as {_kind(path)}: {exc}") from None


def _kind(path: Path) -> str:
    return "gzip-compressed UTF-8 JSON Lines" if path.suffix == ".gz" else "UTF-8 JSON Lines"


def write_outcomes(path: str | Path, records: Iterable[OutcomeRecord]) -> int:
    """Write records (checked) as JSON Lines, gzip-compressed when the name ends in .gz.

    The gzip header carries no name or timestamp, so the same records give the same bytes.
    The file is written beside `path` under a temporary name and renamed into place, so an
    error (a bad record, a failing source) leaves an earlier file at `path` as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw:
            binary: Any = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if path.suffix == ".gz" else raw
            with io.TextIOWrapper(binary, encoding="utf-8", newline="\n") as text:
                for record in records:
                    record.check()
                    text.write(record.to_json() + "\n")
                    count += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


class PriceError(ValueError):
    """A price table that cannot be used; the message names the file and the entry."""


def read_json_object(path: str | Path, error: type[ValueError], what: str) -> dict[str, Any]:
    """The JSON object in the file `path`; `error` naming `what` and the file when it cannot be read,
    is not JSON or is not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{what} {path}: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{what} {path}: not a JSON object but {type(data).__name__}")
    return data


def read_prices(path: str | Path) -> dict[str, dict[str, float]]:
    """A prices.json: {model: {"input_per_mtok": USD, "output_per_mtok": USD}, ...}, checked."""
    data = read_json_object(path, PriceError, "the price table")
    for model, entry in data.items():
        keys = ("input_per_mtok", "output_per_mtok")
        if not isinstance(entry, dict) or not all(_is_number(entry.get(k)) and entry[k] >= 0 for k in keys):
            raise PriceError(f"{path}: the price of {model!r} needs input_per_mtok and output_per_mtok, USD >= 0")
    return data


def prompt_key(prompt: str) -> str:
    """The SHA-256 of a prompt: how a recording is found by its exact text."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def estimate_tokens(text: str | None) -> int:
    """Tokens estimated from length where none were recorded: 4 characters a token."""
    return tokens_from_chars(len(text) if text else 0)


def tokens_from_chars(chars: int) -> int:
    return max(1, round(chars / CHARS_PER_TOKEN)) if chars else 0


def cost_from_prices(prompt_tokens: int, completion_tokens: int, prices: Mapping[str, float]) -> float:
    """USD from a price entry `{"input_per_mtok": ..., "output_per_mtok": ...}`."""
    return (prompt_tokens * prices["input_per_mtok"] + completion_tokens * prices["output_per_mtok"]) / 1e6
