"""Task specs of the vendored benchmarks: each item's reference answer passes the item's own
checker with the metadata the spec carries, and the sample is fixed by its seed."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.benchmark_tasks import BENCHMARKS, TaskSpec, all_tasks, benchmark_tasks
from orchestrator.core.checking import has_checker
from orchestrator.outcomes import DOMAINS
from providers.checkers import check


def checked(spec: TaskSpec, answer: str) -> Any:
    """The checker's verdict, given what a run's verification gives it (studio.services.verification)."""
    item = {
        "prompt": spec.text,
        **{k: spec.metadata[k] for k in ("entry_point", "timeout_s", "tests") if k in spec.metadata},
    }
    return check(spec.checker, answer, spec.gold, item=item)


@pytest.mark.parametrize("benchmark", ["gsm8k", "math500", "hotpotqa", "bfcl"])
def test_every_items_reference_passes_its_checker(benchmark: str) -> None:
    specs = all_tasks(benchmark)

    failed = [spec.item_id for spec in specs if not checked(spec, spec.reference).passed]

    assert len(specs) > 300 and failed == []


@pytest.mark.parametrize("benchmark", ["humaneval", "mbpp"])
def test_code_references_pass_their_tests_in_the_sandbox(benchmark: str) -> None:
    specs = benchmark_tasks(benchmark, 6, seed=1)

    assert [checked(spec, spec.reference).detail for spec in specs] == ["all tests passed"] * 6
    # and the tests do run: a body that returns nothing fails them
    spec = specs[0]
    assert not checked(spec, f"```python\n{spec.text}    return None\n```").passed


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_specs_carry_a_known_checker_domain_and_item_id(benchmark: str) -> None:
    for spec in benchmark_tasks(benchmark, 5, seed=0):
        assert has_checker(spec.checker) and spec.domain in DOMAINS
        assert spec.metadata["item_id"] == spec.item_id and spec.text.strip() and spec.gold


def test_what_each_kind_of_task_carries() -> None:
    (gsm8k,) = benchmark_tasks("gsm8k", 1)
    assert gsm8k.gold.isdigit() and gsm8k.reference.endswith(f"#### {gsm8k.gold}")
    (code,) = benchmark_tasks("humaneval", 1)
    assert code.text.lstrip().startswith(("def ", "from ", "import ")) and code.gold == code.metadata["tests"]
    assert "def check(candidate)" in code.gold and code.metadata["entry_point"] in code.text
    (tool,) = benchmark_tasks("bfcl_multiple", 1)
    assert tool.benchmark == "bfcl" and tool.metadata["category"] == "multiple" and tool.domain == "tool_use"
    schemas = str(tool.metadata["tools"])
    assert "'dict'" not in schemas and "'object'" in schemas  # JSON Schema types, as providers take them
    assert all("." not in function["name"] for function in tool.metadata["tools"])


def test_a_bfcl_category_is_only_its_items() -> None:
    specs = all_tasks("bfcl_parallel")

    assert len(specs) == 200 and {spec.metadata["category"] for spec in specs} == {"parallel"}
    assert len(all_tasks("bfcl")) == 1000


def test_the_sample_is_fixed_by_its_seed_and_grows_by_n() -> None:
    first = [spec.item_id for spec in benchmark_tasks("math500", 20, seed=7)]

    assert [spec.item_id for spec in benchmark_tasks("math500", 20, seed=7)] == first
    assert [spec.item_id for spec in benchmark_tasks("math500", 20, seed=8)] != first
    assert [spec.item_id for spec in benchmark_tasks("math500", 30, seed=7)][:20] == first
    assert len(set(first)) == 20


def test_bad_requests_are_clear_value_errors() -> None:
    with pytest.raises(ValueError, match=r"Unknown benchmark 'chess'; use one of gsm8k, humaneval, .*bfcl_parallel"):
        benchmark_tasks("chess", 1)
    with pytest.raises(ValueError, match=r"n must be within 1 and 164 \(the items of humaneval\), not 0"):
        benchmark_tasks("humaneval", 0)
    with pytest.raises(ValueError, match="not 165"):
        benchmark_tasks("humaneval", 165)
    with pytest.raises(ValueError, match="Unknown benchmark 'gsm8k_train'"):
        benchmark_tasks("gsm8k_train", 1)  # loadable, but not offered as tasks
