"""Checker-verified task specs made from the vendored benchmark items (`orchestrator.benchmarks`).

    benchmark_tasks("gsm8k", 50, seed=0)  -> 50 TaskSpecs, the same 50 for the same seed

Each spec carries what a task needs to be scored and run: the prompt text, the gold answer
and checker (`orchestrator.core.checking`), the domain, the item id, and the metadata the checker
and the primitives read (a code item's `entry_point` and `tests`, a BFCL item's `tools`), plus
`reference`: an answer the checker accepts (the worked solution, the canonical code, the gold
calls), which tests and the synthetic pool (`workers.synthetic_answers`) use.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orchestrator.benchmarks import BFCL_CATEGORIES, load

BENCHMARKS = ("gsm8k", "humaneval", "mbpp", "math500", "hotpotqa", "bfcl", *(f"bfcl_{c}" for c in BFCL_CATEGORIES))

# BFCL writes Java-ish types in its schemas; OpenAI-compatible providers want JSON Schema's.
_SCHEMA_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}
_CALC = re.compile(r"<<[^>]*>>")  # GSM8K's calculator annotations, 2/2=<<2/2=1>>1


@dataclass(frozen=True)
class TaskSpec:
    """One task to create: `Task(text, gold_answer=gold, checker, benchmark, domain, metadata)`."""

    text: str
    gold: str
    checker: str
    benchmark: str
    domain: str
    item_id: str  # also in metadata["item_id"]: collections key outcomes by it
    metadata: dict[str, Any] = field(default_factory=dict)
    reference: str = ""  # an answer the checker accepts; "" when none is known (a user's own task)


def benchmark_tasks(benchmark: str, n: int, seed: int = 0) -> list[TaskSpec]:
    """A seeded sample of `n` items of `benchmark` as task specs: the same for the same seed, and
    the first `n` of a larger sample with that seed. ValueError naming the problem for an unknown
    benchmark or an `n` outside 1 to the number of items."""
    specs = all_tasks(benchmark)
    if not 1 <= n <= len(specs):
        raise ValueError(f"n must be within 1 and {len(specs)} (the items of {benchmark}), not {n}.")
    order = list(range(len(specs)))
    random.Random(seed).shuffle(order)  # noqa: S311 - a reproducible sample, not a secret
    return [specs[i] for i in order[:n]]


def all_tasks(benchmark: str) -> list[TaskSpec]:
    """Every item of `benchmark` as a task spec, in the upstream order."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"Unknown benchmark {benchmark!r}; use one of {', '.join(BENCHMARKS)}.")
    make = _MAKERS["bfcl" if benchmark.startswith("bfcl") else benchmark]
    return [make(item) for item in load(benchmark)]


def _gsm8k(item: dict[str, Any]) -> TaskSpec:
    solution = _CALC.sub("", item["answer"])
    gold = solution.rpartition("####")[2].strip().replace(",", "")
    return TaskSpec(
        text=item["question"],
        gold=gold,
        checker="gsm8k",
        benchmark="gsm8k",
        domain="math",
        item_id=item["id"],
        metadata={"item_id": item["id"]},
        reference=solution,
    )


def _math500(item: dict[str, Any]) -> TaskSpec:
    # The final box states the gold answer as the dataset gives it (a solution may box several things).
    reference = f"{item['solution']}\n\nThe final answer is $\\boxed{{{item['answer']}}}$."
    return TaskSpec(
        text=item["problem"],
        gold=item["answer"],
        checker="math500",
        benchmark="math500",
        domain="math",
        item_id=item["id"],
        metadata={"item_id": item["id"]},
        reference=reference,
    )


def _code(benchmark: str) -> Callable[[dict[str, Any]], TaskSpec]:
    def make(item: dict[str, Any]) -> TaskSpec:
        # The text is the bare Python prompt: the code checker prepends it to a body-only answer.
        canonical = item.get("canonical_solution")
        solution = item["prompt"] + canonical if canonical else table_solution(item)
        return TaskSpec(
            text=item["prompt"],
            gold=item["test"],
            checker=benchmark,
            benchmark=benchmark,
            domain="code",
            item_id=item["id"],
            metadata={"item_id": item["id"], "entry_point": item["entry_point"], "tests": item["test"]},
            reference=f"```python\n{solution}```",
        )

    return make


def table_solution(item: dict[str, Any]) -> str:
    """MBPP's copy ships no solution: a function that returns what each of the tests' asserts
    (`assert candidate(ARGS) == EXPECTED`) expects, for the references of tests and the synthetic pool."""
    check = next(
        node for node in ast.parse(item["test"]).body if isinstance(node, ast.FunctionDef) and node.name == "check"
    )
    lines = [f"def {item['entry_point']}(*args):"]
    for statement in check.body:
        if not (isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare)):
            raise ValueError(f"{item['id']}: a test that is not `assert candidate(...) == ...`")
        call, expected = statement.test.left, statement.test.comparators[0]
        if not isinstance(call, ast.Call):
            raise ValueError(f"{item['id']}: a test that does not call the candidate")
        args = ast.unparse(ast.Tuple(elts=call.args, ctx=ast.Load()))
        lines += [f"    if args == {args}:", f"        return {ast.unparse(expected)}"]
    lines.append("    raise ValueError('no known case')")
    return "\n".join(lines) + "\n"


def _hotpotqa(item: dict[str, Any]) -> TaskSpec:
    return TaskSpec(
        text=item["question"],
        gold=item["answer"],
        checker="hotpotqa",
        benchmark="hotpotqa",
        domain="multi_hop",
        item_id=item["id"],
        metadata={"item_id": item["id"]},
        reference=f"The answer is {item['answer']}.",
    )


def _bfcl(item: dict[str, Any]) -> TaskSpec:
    text = "\n".join(str(turn["content"]) for turn in item["question"][0] if turn.get("role") == "user")
    tools = [openai_function(function) for function in item["function"]]
    calls = [
        {"name": name.replace(".", "_"), "arguments": gold_arguments(allowed)}
        for call in item["possible_answer"]
        for name, allowed in call.items()
    ]
    return TaskSpec(
        text=text,
        gold=json.dumps(item["possible_answer"]),
        checker="bfcl",
        benchmark="bfcl",
        domain="tool_use",
        item_id=item["id"],
        metadata={"item_id": item["id"], "category": item["category"], "tools": tools},
        reference=json.dumps(calls),
    )


def openai_function(function: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function schema as OpenAI function calling takes it: no dots in the name (the
    checker takes `math_hypot` for `math.hypot`), JSON Schema types (`dict` -> `object`)."""
    return {**function, "name": function["name"].replace(".", "_"), "parameters": _schema(function["parameters"])}


def _schema(node: dict[str, Any]) -> dict[str, Any]:
    out = dict(node)
    if isinstance(node.get("type"), str):
        out["type"] = _SCHEMA_TYPES.get(node["type"], node["type"])
    if isinstance(node.get("properties"), dict):
        out["properties"] = {name: _schema(value) for name, value in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _schema(node["items"])
    return out


_OMIT = object()


def gold_arguments(allowed: dict[str, list[Any]]) -> dict[str, Any]:
    """One set of arguments BFCL's gold accepts: each argument's first allowed value; an
    optional one (`""` among its values) left out when `""` is all it allows."""
    out = {}
    for name, values in allowed.items():
        value = _first(values)
        if value is not _OMIT:
            out[name] = value
    return out


def _first(values: list[Any]) -> Any:
    for value in values:
        if value != "":
            return _concrete(value)
    return _OMIT


def _concrete(option: Any) -> Any:
    if isinstance(option, dict):  # a nested object: each key's allowed values
        return gold_arguments(option)
    if isinstance(option, list):  # a list value: its elements, each as given (or an object's allowed values)
        return [_concrete(element) for element in option]
    return option


_MAKERS: dict[str, Callable[[dict[str, Any]], TaskSpec]] = {
    "gsm8k": _gsm8k,
    "math500": _math500,
    "humaneval": _code("humaneval"),
    "mbpp": _code("mbpp"),
    "hotpotqa": _hotpotqa,
    "bfcl": _bfcl,
}
