"""BIG-Bench Hard: code-davinci-002 under two primitives, direct (answer-only) and cot.

`bbh/<task>.json` holds the items and gold targets; the outputs of each primitive hold,
in the same order, the few-shot prompt the model received (`input`), its `prediction`
and the `target`. Score = 1 when the extracted answer equals the target exactly: for
cot, the text after the last "So the answer is"; for both, stripped of whitespace and a
final period. This reproduces the upstream `accuracy` of all 54 (task, primitive) runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from orchestrator.outcomes import OutcomeRecord
from workers.importers.common import ImportLog, read_json

SOURCE = "bbh"
MODEL = "code-davinci-002"
OUTPUT_DIRS = {"direct": "code-davinci-002-direct", "cot": "code-davinci-002-cot"}
OUTPUT_NAME = "{task}_few_shot_template_0-255000.json"
ANSWER_CUE = "So the answer is"


def records(src: Path, *, log: ImportLog | None = None) -> Iterator[OutcomeRecord]:
    log = log if log is not None else ImportLog()
    for task_path in sorted((src / "bbh").glob("*.json")):
        task = task_path.stem
        examples = read_json(task_path)["examples"]
        for primitive, folder in OUTPUT_DIRS.items():
            output_path = src / "code-davinci-002-outputs" / folder / OUTPUT_NAME.format(task=task)
            if not output_path.exists():
                log.skipped[f"{primitive} items without an output file"] += len(examples)
                continue
            outputs = read_json(output_path)["outputs"]
            if len(outputs) != len(examples):
                raise ValueError(f"{output_path.name}: {len(outputs)} outputs for {len(examples)} items")
            for index, (example, output) in enumerate(zip(examples, outputs, strict=True)):
                if output["target"] != example["target"] or example["input"] not in output["input"]:
                    raise ValueError(f"{output_path.name}: output {index} is not item {index}")
                yield OutcomeRecord(
                    source=SOURCE,
                    item_id=f"bbh.{task}.{index}",
                    split=None,
                    benchmark=f"bbh/{task}",
                    domain="reasoning",
                    prompt=output["input"],
                    gold=example["target"],
                    model=MODEL,
                    primitive=primitive,
                    response=output["prediction"],
                    score=float(extract_answer(output["prediction"], primitive) == example["target"]),
                    prompt_tokens=None,
                    completion_tokens=None,
                    cost_usd=None,
                    latency_s=None,
                )


def extract_answer(prediction: str, primitive: str) -> str:
    text = prediction
    if primitive == "cot" and ANSWER_CUE in text:
        text = text[text.rindex(ANSWER_CUE) + len(ANSWER_CUE) :]
    text = text.strip()
    return text.removesuffix(".").strip()
