"""RouterArena cached results: one record per (query, model), primitive direct.

Each `<model>.jsonl` line holds the question, the generated answer, the real token
usage and `evaluation_result{ground_truth, score, inference_cost}`; tokens and cost are
used as recorded. The benchmark is the `global_index` without its number
(`MMLUPro_history_12` -> `MMLUPro_history`). A score outside [0, 1] (one negative
METEOR score upstream) is skipped rather than clipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord
from workers.importers.common import ImportLog, Prices, read_json, read_jsonl

SOURCE = "routerarena"
# Keyed by the benchmark family: the benchmark name up to its first "_" or "-".
DOMAINS = {
    "AIME": "math",
    "AsDiv": "math",
    "FinQA": "math",
    "GSM8K": "math",
    "MATH": "math",
    "MathQA": "math",
    "ArcMMLU": "knowledge",
    "GeoBench": "knowledge",
    "GeoGraphyData": "knowledge",
    "MedMCQA": "knowledge",
    "MMLU": "knowledge",
    "MMLUPro": "knowledge",
    "MusicTheoryBench": "knowledge",
    "OpenTDB": "knowledge",
    "PubMedQA": "knowledge",
    "QANTA": "knowledge",
    "ChessInstruct": "reasoning",
    "Ethics": "reasoning",
    "SocialiQA": "reasoning",
    "SuperGLUE": "reasoning",
    "LiveCodeBench": "code",
    "NarrativeQA": "long_context",
    "WMT19": "chat",
}
# MMLU-Pro's math subject is math, not general knowledge.
BENCHMARK_DOMAINS = {"MMLUPro_math": "math"}


def prices(src: Path) -> Prices:
    """`cost.json` as a price table ($ per million tokens)."""
    return {
        model: {
            "input_per_mtok": float(entry["input_token_price_per_million"]),
            "output_per_mtok": float(entry["output_token_price_per_million"]),
        }
        for model, entry in read_json(src / "cost.json").items()
    }


def records(src: Path, *, log: ImportLog | None = None) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    for path in sorted(src.glob("*.jsonl")):
        for row in read_jsonl(path):
            record = _record(row, log)
            if record is not None:
                yield record


def domain_of(benchmark: str) -> str:
    family = benchmark.split("_", 1)[0].split("-", 1)[0]
    if benchmark in BENCHMARK_DOMAINS:
        return BENCHMARK_DOMAINS[benchmark]
    if family not in DOMAINS:
        raise ValueError(f"no domain for RouterArena benchmark {benchmark!r}")
    return DOMAINS[family]


def _record(row: dict[str, Any], log: ImportLog) -> OutcomeRecord | None:
    result = row.get("evaluation_result") or {}
    score = result.get("score")
    if score is None:
        log.skipped["no evaluation score"] += 1
        return None
    if not 0 <= score <= 1:
        log.skipped["score outside [0, 1]"] += 1
        return None
    benchmark = row["global_index"].rsplit("_", 1)[0]
    usage = row.get("token_usage") or {}
    return OutcomeRecord(
        source=SOURCE,
        item_id=row["global_index"],
        split=None,
        benchmark=benchmark,
        domain=domain_of(benchmark),
        prompt=row["question"],
        gold=result.get("ground_truth"),
        model=row["llm_selected"],
        primitive="direct",
        response=row.get("generated_answer"),
        score=float(score),
        prompt_tokens=usage.get("input_tokens"),
        completion_tokens=usage.get("output_tokens"),
        cost_usd=result.get("inference_cost"),
        latency_s=None,
    )
