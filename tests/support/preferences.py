"""Finished runs with a plan, and pairs of them, for the preference tests."""

from __future__ import annotations

from typing import Any

from studio.models import Node, PreferencePair, Run, Task
from tests.factories import EndpointFactory, PrimitiveFactory, RunFactory, TaskFactory


def finished_run(task: Task, answer: str = "42", model: str = "gpt-4o", primitive: str = "cot", **fields: Any) -> Run:
    """A succeeded run whose one root node ran (model, primitive); its plan is Plan.single."""
    run = RunFactory(task=task, status="succeeded", final_answer=answer, **fields)
    endpoint = EndpointFactory(name=f"{model}-{run.pk}", model=model)
    Node.objects.create(
        run=run, key="root", kind="root", text=task.text, status="succeeded",
        endpoint=endpoint, primitive=PrimitiveFactory(name=primitive), answer=answer,
    )  # fmt: skip
    return run


def make_pair(
    task: Task | None = None, model_a: str = "gpt-4o", model_b: str = "llama-3-8b", **fields: Any
) -> PreferencePair:
    task = task or TaskFactory()
    return PreferencePair.objects.create(
        task=task,
        run_a=finished_run(task, "42", model=model_a),
        run_b=finished_run(task, "41", model=model_b),
        **fields,
    )
