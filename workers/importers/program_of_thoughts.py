"""Program-of-Thoughts: Codex writes a Python program whose executed `ans` is the answer.

RUNS names each output file imported and what it is: few-shot PoT (primitive
`program`), zero-shot PoT (`program_zero_shot`), self-consistency over 30 sampled
programs (`self_consistency`, response = the programs as a JSON list) and a GPT-4
direct-answer baseline on AQuA. Items are joined to `data/` in file order (upstream's
`--end -1` left out each dataset's last item).

Prompts: a few-shot file records its demonstration once (a `prompt`/`demonstration`
line); the per-item part is appended as upstream's run scripts do. A zero-shot program
starts with its prompt, cut at the template's last comment line. Scores follow
upstream: the executed number against the answer, rounded to the shorter number of
decimals (`finqa_equal`); on AQuA the chosen option letter; for GPT-4, "<answer>)" in
the last line of its reply.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.outcomes import OutcomeRecord
from workers.importers.common import ImportLog, Prices, Usage, estimated_usage, read_json, read_jsonl

SOURCE = "program_of_thoughts"
CODEX = "code-davinci-002"
SOLVER_CALL = "ans = solver()"
ZERO_SHOT_PROMPT_ENDS = (
    "    # Firstly, we need define the following variable:\n",
    "    # According to the question, we can define the variables:\n",
    "    # In the first step, we can define the following variable:\n",
)


@dataclass(frozen=True)
class Run:
    path: str  # relative to the source folder
    dataset: str
    model: str
    primitive: str
    style: str  # few_shot | zero_shot | chat


RUNS = (
    Run("outputs/gsm8K_s0_e-1_11_17_10_20.jsonl", "gsm8k", CODEX, "program", "few_shot"),
    Run("outputs/gsm8K_zs_s0_e-1_11_19_09_55.jsonl", "gsm8k", CODEX, "program_zero_shot", "zero_shot"),
    Run("outputs/svamp_s0_e-1_11_24_14_38.jsonl", "svamp", CODEX, "program", "few_shot"),
    Run("outputs/svamp_zs_s0_e-1_11_18_20_12.jsonl", "svamp", CODEX, "program_zero_shot", "zero_shot"),
    Run(
        "outputs/multiarith_zs_s0_e-1_11_19_20_12.jsonl",
        "multiarith",
        CODEX,
        "program_zero_shot",
        "zero_shot",
    ),
    Run("outputs/aqua_s0_e-1_11_06_18_38.jsonl", "aqua", CODEX, "program", "few_shot"),
    Run("outputs/aqua_sc_s0_e-1_11_07_20_49.jsonl", "aqua", CODEX, "self_consistency", "few_shot"),
    Run("outputs/aqua_zs_s0_e-1_11_19_11_56.jsonl", "aqua", CODEX, "program_zero_shot", "zero_shot"),
    Run("outputs/aqua_gpt4_s0_e-1_03_31_22_24.jsonl", "aqua", "gpt-4", "direct", "chat"),
)


def records(src: Path, *, prices: Prices | None = None, log: ImportLog | None = None) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    listed = {run.path for run in RUNS}
    for path in sorted(src.glob("outputs/*.jsonl")):
        if path.relative_to(src).as_posix() not in listed:
            log.skipped[f"rows of unlisted run {path.name}"] += sum(1 for _ in read_jsonl(path))
    for run in RUNS:
        if not (src / run.path).exists():
            log.notes[f"run file missing: {run.path}"] += 1
            continue
        yield from _run_records(src, run, prices or {}, log)


def _run_records(src: Path, run: Run, prices: Prices, log: ImportLog) -> Iterator[OutcomeRecord]:
    ids_by_key = _item_ids(src, run.dataset)
    header: str | None = None
    for row in read_jsonl(src / run.path):
        if "demonstration" in row or "prompt" in row:
            header = row.get("demonstration", row.get("prompt"))
            continue
        waiting = ids_by_key.get(_row_key(run.dataset, row))
        if not waiting:
            log.skipped["output rows matching no data item"] += 1
            continue
        prompt, response = _prompt_and_response(run, row, header)
        usage = estimated_usage(run.model, prompt, response, prices) if run.style == "chat" else Usage()
        yield OutcomeRecord(
            source=SOURCE,
            item_id=waiting.popleft(),
            split=None,
            benchmark=run.dataset,
            domain="math",
            prompt=prompt,
            gold=str(row["answer"]),
            model=run.model,
            primitive=run.primitive,
            response=response,
            score=_score(run, row),
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=usage.cost_usd,
            latency_s=None,
        )


def _item_ids(src: Path, dataset: str) -> dict[str, deque[str]]:
    """The dataset's item ids by question key, in file order (MultiArith repeats questions)."""
    ids: dict[str, deque[str]] = defaultdict(deque)
    if dataset == "gsm8k":
        for index, item in enumerate(read_json(src / "data" / "gsm8K.json")):
            ids[item["question"]].append(f"gsm8k.test.{index}")
    elif dataset == "svamp":
        for item in read_json(src / "data" / "SVAMP.json"):
            ids[_svamp_key(item["Body"], item["Question"])].append(f"svamp.{item['ID']}")
    elif dataset == "multiarith":
        for item in read_json(src / "data" / "multiarith.json"):
            ids[item["sQuestion"]].append(f"multiarith.{item['iIndex']}")
    elif dataset == "aqua":
        for index, item in enumerate(read_jsonl(src / "data" / "aqua_test.jsonl")):
            ids[item["question"]].append(f"aqua.test.{index}")
    else:
        raise ValueError(f"unknown dataset {dataset!r}")
    return ids


def _svamp_key(body: str, question: str) -> str:
    # The zero-shot script appended "." to the passage before recording it.
    return f"{body if body.endswith('.') else body + '.'}\n{question}"


def _row_key(dataset: str, row: dict[str, Any]) -> str:
    if dataset == "svamp":
        return _svamp_key(row["passage"], row["question"])
    return str(row["question"])


def _prompt_and_response(run: Run, row: dict[str, Any], header: str | None) -> tuple[str, str | None]:
    if run.style == "zero_shot":
        return _split_program(row["generated"])
    if run.style == "chat":
        return f"# Question: {row['question']}\n# Answer option: {row['options']}\n", row.get("rationale")
    if header is None:
        raise ValueError(f"{run.path}: an item before any demonstration line")
    generated = row["generated"]
    if run.primitive == "self_consistency":
        response: str | None = json.dumps(generated, ensure_ascii=False)
    elif isinstance(generated, list):
        response = generated[0] if generated else None
    else:
        response = generated
    return header + "\n" + _few_shot_request(run.dataset, row), response


def _few_shot_request(dataset: str, row: dict[str, Any]) -> str:
    if dataset == "gsm8k":
        return f"Question: {row['question']}\n# Python code, return ans\n"
    if dataset == "svamp":
        return f"# Passage: {row['passage']}\n# Question: {row['question']}\n"
    if dataset == "aqua":
        return f"# Question: {row['question']}\n# Answer option: {row['options']}"
    raise ValueError(f"no few-shot template for {dataset!r}")


def _split_program(program: str) -> tuple[str, str]:
    """(prompt, completion) of a zero-shot program; upstream's trailing solver call is dropped."""
    for end in ZERO_SHOT_PROMPT_ENDS:
        if end in program:
            cut = program.index(end) + len(end)
            return program[:cut], program[cut:].removesuffix(SOLVER_CALL)
    raise ValueError(f"zero-shot program without a known prompt ending: {program[:80]!r}")


def _score(run: Run, row: dict[str, Any]) -> float:
    if run.style == "chat":
        return float(f"{row['answer']})" in str(row["generated_prediction"]))
    if run.dataset == "aqua":
        return float(row["prediction"] == row["answer"])
    return float(numbers_match(row["executed"], row["answer"]))


def numbers_match(prediction: object, reference: object) -> bool:
    """Upstream's `finqa_equal`: equal after rounding both to the shorter decimal places."""
    if prediction is None:
        return False
    if isinstance(prediction, bool):
        return reference == ("yes" if prediction else "no")
    if not isinstance(prediction, int | float) or not isinstance(reference, int | float):
        return prediction == reference
    places = min(_decimals(prediction), _decimals(reference))
    return round(prediction, places) == round(reference, places)


def _decimals(number: float) -> int:
    text = str(number)
    return len(text.split(".")[-1]) if "." in text else 5
