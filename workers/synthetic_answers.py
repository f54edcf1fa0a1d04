"""What the synthetic pool (`workers.synthetic_pool`) answers: which benchmark item a request is
about, whether a made-up model gets it right, and a reply that the item's checker accepts
(right) or rejects (wrong). No clock and no randomness but a hash; only `ItemIndex.of_benchmarks`
reads files (the vendored items).

The item is found by its task text (`orchestrator.benchmark_tasks`), which is a user message
of every primitive's request: whole (direct, cot, self_consistency, program, reflexion,
tool_use), or wrapped in more text (verify's "Task: ...", long_context's "Question: ..."),
where the longest task text it holds is taken.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from orchestrator.benchmark_tasks import TaskSpec, all_tasks
from orchestrator.core.checking import KINDS, benchmark_key

BENCHMARKS = ("gsm8k", "humaneval", "mbpp", "math500", "hotpotqa", "bfcl")  # every item, once
BUILTIN_TOOLS = frozenset({"calculator", "python"})  # tool_use's own tools, never an item's
MIN_WRAPPED_CHARS = 32  # a shorter task text is matched only whole, not inside a longer message
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class AmbiguousPrompt(ValueError):
    """Several items share the request's task text, with other gold answers, and it says nothing
    (no functions offered) that tells them apart."""


@dataclass(frozen=True)
class Reply:
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name", "arguments"}]


class ItemIndex:
    """Benchmark items by their task text."""

    def __init__(self, specs: Iterable[TaskSpec]) -> None:
        self.by_text: dict[str, list[TaskSpec]] = defaultdict(list)
        for spec in specs:
            self.by_text[spec.text.strip()].append(spec)
        self._wrapped = sorted((text for text in self.by_text if len(text) >= MIN_WRAPPED_CHARS), key=len, reverse=True)

    @classmethod
    def of_benchmarks(cls, names: Sequence[str] = BENCHMARKS) -> ItemIndex:
        return cls(spec for name in names for spec in all_tasks(name))

    def __len__(self) -> int:
        return sum(len(specs) for specs in self.by_text.values())

    def find(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[str] = ()) -> TaskSpec | None:
        """The item of a request's messages (`tools`: the names of the functions it offers), or None;
        AmbiguousPrompt when it is one of several that only the functions tell apart."""
        users = [message_text(m) for m in messages if m.get("role") == "user"]
        for text in users:
            if found := self.by_text.get(text.strip()):
                return _pick(found, tools)
        for text in users:
            for known in self._wrapped:
                if known in text:
                    return _pick(self.by_text[known], tools)
        return None


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: its content string, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _pick(specs: list[TaskSpec], tools: Sequence[str]) -> TaskSpec:
    """A few BFCL questions are asked twice, with other functions and gold calls: the one whose
    functions were sent."""
    offered = set(tools) - BUILTIN_TOOLS
    for spec in specs:
        if offered and {tool["name"] for tool in spec.metadata.get("tools", [])} == offered:
            return spec
    if len({spec.reference for spec in specs}) > 1:
        raise AmbiguousPrompt(
            f"{len(specs)} benchmark items ({', '.join(spec.item_id for spec in specs)}) share this task text; "
            "send the item's functions as tools to tell them apart."
        )
    return specs[0]


def draw(seed: int, model: str, spec: TaskSpec) -> float:
    """A number in [0, 1) fixed by (seed, model, item): the model is right when it is below its
    accuracy. The item is keyed by its text, so that BFCL's twins (one question, two items that
    take the same answer) get one outcome, whichever of them a request without functions names."""
    digest = hashlib.sha256(f"{seed}\x00{model}\x00{spec.benchmark}\x00{spec.text.strip()}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def answer(spec: TaskSpec, right: bool, *, tools: bool = False, program: bool = False) -> Reply:
    """A reply to the item that its checker accepts (`right`) or rejects. `tools`: the request
    offered functions (a BFCL item is then answered with tool calls); `program`: it asked for a
    program that prints the answer (the `program` primitive)."""
    kind = KINDS[benchmark_key(spec.checker)]
    if kind == "code":
        return Reply(spec.reference if right else _wrong_code(spec))
    if kind == "function_calls":
        calls = json.loads(spec.reference)
        if not right:
            calls = _wrong_calls(calls, json.loads(spec.gold))
        return Reply(None, calls) if tools else Reply(json.dumps(calls))
    text, final = _stated(spec, kind, right)
    if program:
        return Reply(f"```python\nprint({final!r})\n```")
    return Reply(text)


def _stated(spec: TaskSpec, kind: str, right: bool) -> tuple[str, str]:
    """(the reply, its final answer) for an item whose answer is stated in words."""
    if right:
        return spec.reference, spec.gold
    if kind == "number":
        wrong = _off(spec.gold) or f"{spec.gold}1"
        worked = spec.reference.rpartition("####")[0]
        return f"{worked}#### {wrong}", wrong
    if kind == "math":
        wrong = _off(spec.gold) or f"1 + {spec.gold}"  # not "+ 1" after it: units after a number are dropped
        solution = spec.reference.rpartition("\n\nThe final answer is")[0].replace("\\boxed", "")
        return f"{solution}\n\nThe final answer is $\\boxed{{{wrong}}}$.", wrong
    wrong = {"yes": "no", "no": "yes"}.get(spec.gold.strip().lower(), "")
    if not wrong:
        wrong = "nobody" if "unknown" in spec.gold.lower() else "unknown"
    return f"The answer is {wrong}.", wrong


def _off(gold: str) -> str | None:
    """A number a tenth or more off the gold one (the checkers forgive a relative 1e-6), or None."""
    if not _NUMBER.fullmatch(gold.strip()):
        return None
    try:
        number = Decimal(gold.strip())
    except InvalidOperation:
        return None
    return str(number + 1 + abs(number) // 10)


def _wrong_code(spec: TaskSpec) -> str:
    """The prompt's function (the entry point is its last), with a body that fails every test."""
    body = "    raise NotImplementedError('not solved')\n"
    return f"```python\n{spec.text.rstrip()}\n{body}```"


def _wrong_calls(calls: list[dict[str, Any]], gold: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gold calls with one value of the first call off (a number, a string, a flag) to one
    the gold does not allow, or, with no such argument, an argument the function does not have."""
    first, *rest = calls
    arguments = dict(first["arguments"])
    allowed = next(iter(gold[0].values()))  # the first call's arguments -> their allowed values
    for name, value in arguments.items():
        changed = _changed(value)
        if changed is not None and changed not in allowed.get(name, []):
            arguments[name] = changed
            break
    else:
        arguments["unknown_argument"] = 1
    return [{**first, "arguments": arguments}, *rest]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return f"{value} (other)" if value else "other"
    return None
