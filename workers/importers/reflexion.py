"""Reflexion programming runs: per-problem `is_solved` under direct vs reflexion.

A "simple" run is one generation per problem (primitive direct); a "reflexion" run
generates, runs the visible tests, reflects and retries (up to 5 times). RUNS names the
run files imported and what each one is; the prompt is the recorded function signature
and docstring, the response the final `solution`, and gold the hidden `test` code.
Upstream recorded no tokens or cost. A direct run's tokens are estimated from the
recorded text where the price table has the model; a reflexion run's cost stays null,
because its intermediate calls were not recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord
from workers.importers.common import ImportLog, Prices, Usage, estimated_usage, read_jsonl

SOURCE = "reflexion"


@dataclass(frozen=True)
class Run:
    path: str  # relative to the source folder
    benchmark: str
    model: str
    primitive: str


RUNS = (
    Run(
        "runs/simple_human_eval_py_logging/humaneval-py..gz_simple_1_gpt-4_pass_at_k_1_py.jsonl",
        "humaneval",
        "gpt-4",
        "direct",
    ),
    Run(
        "runs/simple_test_run/simple_1_gpt-3.5-turbo_pass_at_k_1.jsonl",
        "humaneval",
        "gpt-3.5-turbo",
        "direct",
    ),
    Run(
        "runs/simple_test_run/simple_1_text-davinci-003_pass_at_k_1.jsonl",
        "humaneval",
        "text-davinci-003",
        "direct",
    ),
    # The file name does not say the model; the Reflexion paper's HumanEval pass@1 run is GPT-4.
    Run(
        "runs/reflexion_humaneval_py_pass_at_1/reflexion_humaneval_py_pass_at_1.jsonl",
        "humaneval",
        "gpt-4",
        "reflexion",
    ),
    Run("runs/simple_mbpp_py/mbpp-py._simple_1_gpt-4_pass_at_k_1_py.jsonl", "mbpp", "gpt-4", "direct"),
    Run("runs/reflexion_mbpp_py/mbpp-py._reflexion_5_gpt-4_pass_at_k_1_py.jsonl", "mbpp", "gpt-4", "reflexion"),
    Run(
        "runs/simple_leetcode_python3_gpt4/leetcode-hard-py-40-uncontaminated._simple_1_gpt-4_pass_at_k_1_py.jsonl",
        "leetcode-hard",
        "gpt-4",
        "direct",
    ),
    Run(
        "runs/simple_leetcode_python3/leetcode-hard-py-40-uncontaminated._simple_1_gpt-3.5-turbo_pass_at_k_1_py.jsonl",
        "leetcode-hard",
        "gpt-3.5-turbo",
        "direct",
    ),
    Run(
        "runs/reflexion_leetcode_python3_gpt4/leetcode-hard-py-40-uncontaminated._reflexion_5_gpt-4_pass_at_k_1_py.jsonl",
        "leetcode-hard",
        "gpt-4",
        "reflexion",
    ),
    Run(
        "runs/reflexion_leetcode_python3/leetcode-hard-py-40-uncontaminated._reflexion_5_gpt-3.5-turbo_pass_at_k_1_py.jsonl",
        "leetcode-hard",
        "gpt-3.5-turbo",
        "reflexion",
    ),
)
# Second (humaneval, gpt-4, direct) runs: one record per (item, model, primitive) keeps the
# run above, whose solutions are all recorded (this one left 30 failed solutions empty).
DUPLICATE_RUNS = (
    "runs/simple_test_run/simple_1_gpt-4_pass_at_k_1.jsonl",
    "runs/simple_humaneval_py_hardest50/humaneval-py_hardest50._simple_1_gpt-4_pass_at_k_1_py.jsonl",
)


def records(src: Path, *, prices: Prices | None = None, log: ImportLog | None = None) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    _log_unlisted(src, log)
    for run in RUNS:
        path = src / run.path
        if not path.exists():
            log.notes[f"run file missing: {run.path}"] += 1
            continue
        for row in read_jsonl(path):
            yield _record(run, row, prices or {}, log)


def _log_unlisted(src: Path, log: ImportLog) -> None:
    listed = {run.path for run in RUNS}
    for path in sorted(src.glob("runs/**/*.jsonl")):
        name = path.relative_to(src).as_posix()
        if name in DUPLICATE_RUNS:
            log.skipped["rows of duplicate runs"] += sum(1 for _ in read_jsonl(path))
        elif name not in listed:
            log.skipped[f"rows of unlisted run {name}"] += sum(1 for _ in read_jsonl(path))


def item_id(benchmark: str, row: dict[str, Any]) -> str:
    if benchmark == "mbpp":
        return str(row["name"])
    if benchmark == "leetcode-hard":
        return f"leetcode-hard/{row['task_id']}"
    return str(row["task_id"])


def _record(run: Run, row: dict[str, Any], prices: Prices, log: ImportLog) -> OutcomeRecord:
    solved = row["is_solved"]
    if isinstance(solved, str):
        solved = {"True": True, "False": False}[solved]
    response = row.get("solution") or None
    if response is None:
        log.notes["empty solution kept (response null)"] += 1
    usage = estimated_usage(run.model, row["prompt"], response, prices) if run.primitive == "direct" else Usage()
    return OutcomeRecord(
        source=SOURCE,
        item_id=item_id(run.benchmark, row),
        split=None,
        benchmark=run.benchmark,
        domain="code",
        prompt=row["prompt"],
        gold=row.get("test") or None,
        model=run.model,
        primitive=run.primitive,
        response=response,
        score=1.0 if solved else 0.0,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd,
        latency_s=None,
    )
