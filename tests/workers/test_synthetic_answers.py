"""The synthetic pool's answers, for every item of the benchmarks that need no sandbox: the
right one passes the item's real checker, the wrong one fails it with a score of 0, however the
request asks (functions offered or not, a program wanted or not)."""

from __future__ import annotations

import ast
import json

import pytest

from orchestrator.benchmark_tasks import all_tasks
from providers.checkers import check
from workers.synthetic_answers import Reply, answer


def said(reply: Reply) -> str:
    """What the primitive would read: the tool calls, or the text, or what the program prints."""
    if reply.content is None:
        return json.dumps(reply.tool_calls)
    if reply.content.startswith("```python\nprint("):
        return str(ast.literal_eval(reply.content.removeprefix("```python\nprint(").removesuffix(")\n```")))
    return reply.content


@pytest.mark.parametrize("benchmark", ["gsm8k", "math500", "hotpotqa", "bfcl"])
@pytest.mark.parametrize(("tools", "program"), [(False, False), (True, False), (False, True)])
def test_right_passes_and_wrong_fails_on_every_item(benchmark: str, tools: bool, program: bool) -> None:
    failed = []
    for spec in all_tasks(benchmark):
        for right in (True, False):
            result = check(spec.checker, said(answer(spec, right, tools=tools, program=program)), spec.gold)
            if result.passed is not right or (not right and result.score > 0):
                failed.append((spec.item_id, right, result.detail))
    assert failed == []


def test_a_bfcl_item_is_called_when_functions_are_offered_and_written_out_otherwise() -> None:
    spec = all_tasks("bfcl_simple_python")[0]

    called, written = answer(spec, True, tools=True), answer(spec, True, tools=False)

    assert called.content is None and called.tool_calls == json.loads(spec.reference)
    assert written.tool_calls == [] and json.loads(written.content or "") == called.tool_calls
