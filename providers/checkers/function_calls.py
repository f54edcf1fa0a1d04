"""BFCL: the reply's function calls against `possible_answer` (names and allowed values)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from providers.checkers.result import CheckResult

Call = tuple[str, dict[str, Any]]
_FENCE = re.compile(r"```[a-zA-Z0-9]*\s*\n?(.*?)```", re.DOTALL)
_MISSING = object()


def check_function_calls(answer: str, gold: Any, *, item: dict[str, Any] | None = None) -> CheckResult:
    """Passed when the reply makes exactly the gold calls, in any order: same function names,
    no unknown arguments, every argument one of its allowed values, and every argument
    whose allowed values do not include "" present. `gold` is BFCL's `ground_truth` list
    (`[{name: {arg: [allowed, ...]}}]`) or the whole possible-answer record."""
    expected = _gold_calls(gold)
    try:
        calls = parse_calls(answer)
    except ValueError as exc:
        return CheckResult.of(False, str(exc))
    if len(calls) != len(expected):
        return CheckResult.of(False, f"expected {len(expected)} call(s), got {len(calls)}")
    problem = _match_all(calls, expected)
    return CheckResult.of(problem is None, problem or "every call matches")


def parse_calls(text: str) -> list[Call]:
    """Calls written as Python (`[f(a=1), g.h(b="x")]`), as JSON (`[{"name": .., "arguments":
    {..}}]`, OpenAI `tool_calls`, or `{name: {args}}`), optionally in a code fence."""
    text = str(text).strip()
    fenced = _FENCE.findall(text)
    candidates = [block.strip() for block in fenced] or [text]
    for candidate in candidates:
        for snippet in (candidate, _between(candidate, "[", "]"), _from_first_call(candidate)):
            if snippet:
                calls = _from_json(snippet)
                if calls is None:
                    calls = _from_python(snippet)
                if calls is not None:
                    return calls
    raise ValueError("no function call could be read from the answer")


def _gold_calls(gold: Any) -> list[Call]:
    if isinstance(gold, dict) and "ground_truth" in gold:
        gold = gold["ground_truth"]
    if isinstance(gold, str):
        gold = json.loads(gold)
    if isinstance(gold, dict):
        gold = [gold]
    return [(name, dict(params)) for call in gold for name, params in call.items()]


def _match_all(calls: list[Call], expected: list[Call]) -> str | None:
    """None when the calls can be paired one-to-one with the gold calls, else the first reason."""
    reasons: list[str] = []

    def assign(index: int, free: list[Call]) -> bool:
        if index == len(expected):
            return True
        for position, call in enumerate(free):
            reason = _match_call(call, expected[index])
            if reason is None and assign(index + 1, free[:position] + free[position + 1 :]):
                return True
            if reason is not None:
                reasons.append(reason)
        return False

    if assign(0, calls):
        return None
    same_name = [r for r in reasons if not r.startswith("called ")]
    return (same_name or reasons or ["the calls do not match"])[0]


def _match_call(call: Call, gold: Call) -> str | None:
    name, args = call
    gold_name, allowed = gold
    if _plain_name(name) != _plain_name(gold_name):
        return f"called {name}, expected {gold_name}"
    for arg in args:
        if arg not in allowed:
            return f"{name}: unexpected argument {arg!r}"
    for arg, values in allowed.items():
        value = args.get(arg, _MISSING)
        if value is _MISSING:
            if "" not in values:
                return f"{name}: missing argument {arg!r}"
        elif not any(_value_matches(value, option) for option in values):
            return f"{name}: {arg}={value!r} is not one of {values!r}"
    return None


def _value_matches(value: Any, option: Any) -> bool:
    if isinstance(option, dict):
        if not isinstance(value, dict):
            return False
        if any(key not in option for key in value):
            return False
        return all(
            ("" in values) if key not in value else any(_value_matches(value[key], o) for o in values)
            for key, values in option.items()
        )
    if isinstance(option, list):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(option)
            and all(_value_matches(v, o) for v, o in zip(value, option, strict=True))
        )
    if isinstance(option, bool) or isinstance(value, bool):
        return isinstance(value, bool) and value is option
    if isinstance(option, int | float):
        return isinstance(value, int | float) and abs(value - option) <= 1e-9 * max(1.0, abs(option))
    if isinstance(option, str):
        return isinstance(value, str) and _standard(value) == _standard(option)
    return bool(value == option)


def _standard(text: str) -> str:
    """BFCL's string comparison: case, spaces and , . / - _ * ^ do not matter."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _plain_name(name: str) -> str:
    return name.replace(".", "_")  # some models must write "math.hypot" as "math_hypot"


def _from_json(text: str) -> list[Call] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = data.get("tool_calls", [data])
    if not isinstance(data, list):
        return None
    calls: list[Call] = []
    for entry in data:
        call = _json_call(entry)
        if call is None:
            return None
        calls.append(call)
    return calls


def _json_call(entry: Any) -> Call | None:
    if not isinstance(entry, dict):
        return None
    entry = entry.get("function", entry)
    if "name" in entry and isinstance(entry["name"], str):
        args = entry.get("arguments", entry.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None
        return (entry["name"], args) if isinstance(args, dict) else None
    if len(entry) == 1:  # {name: {args}}
        ((name, args),) = entry.items()
        return (name, args) if isinstance(args, dict) else None
    return None


def _from_python(text: str) -> list[Call] | None:
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls: list[Call] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            return None
        if node.args:
            raise ValueError("the calls must name every argument (f(x=1), not f(1))")
        name = _dotted(node.func)
        if name is None:
            return None
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
        except (ValueError, SyntaxError, TypeError):
            return None
        calls.append((name, args))
    return calls


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _between(text: str, opening: str, closing: str) -> str:
    start, end = text.find(opening), text.rfind(closing)
    return text[start : end + 1] if 0 <= start < end else ""


def _from_first_call(text: str) -> str:
    match = re.search(r"[A-Za-z_][\w.]*\s*\(", text)
    end = text.rfind(")")
    return text[match.start() : end + 1] if match and end > match.start() else ""
