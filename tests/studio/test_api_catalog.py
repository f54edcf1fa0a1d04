"""What the submit form offers: options, recorded items, and a task's checker checked."""

from __future__ import annotations

from decimal import Decimal

import pytest

from orchestrator.outcomes import prompt_key
from studio.models import RecordedOutcome, Role, Task
from studio.services.outcomes import replay_pool_ensure

pytestmark = pytest.mark.django_db


def recorded(source: str, item_id: str, model: str, prompt: str, benchmark: str = "gsm8k") -> None:
    RecordedOutcome.objects.create(
        source=source, item_id=item_id, benchmark=benchmark, domain="math", prompt=prompt,
        prompt_sha256=prompt_key(prompt), gold="1", model=model, primitive="direct", response="1", score=1.0,
        cost_usd=Decimal("0.001"),
    )  # fmt: skip


def test_options_name_policies_presets_checkers_and_the_default_pool(api_as) -> None:
    pool = replay_pool_ensure(pool_name="replay-demo", pairs=[("m", "direct")], prices={})
    recorded("rb", "rb.1", "m", "What is 1?")
    body = api_as(Role.VIEWER).get("/options").json_body
    assert {"name": "default", "needs_checkpoint": False} in body["policies"]
    assert {"name": "learned", "needs_checkpoint": True} in body["policies"]
    assert body["default_policy"] == "default"  # no policy checkpoint is the default yet
    assert body["presets"] == {"best": 0.0, "balanced": 0.05, "cheap": 1.0}
    assert "gsm8k" in body["checkers"] and "multiple_choice" in body["checkers"]
    assert body["default_pool_id"] == pool.pk
    assert body["sources"] == ["rb"]


def test_options_name_the_benchmarks_of_the_tasks_you_may_see(api_as, make_user) -> None:
    from tests.factories import TaskFactory

    me = make_user(Role.VIEWER)
    for benchmark in ("mbpp", "gsm8k", "gsm8k", ""):
        TaskFactory(owner=me, benchmark=benchmark)
    TaskFactory(benchmark="hotpotqa")  # someone else's
    assert api_as(user=me).get("/options").json_body["benchmarks"] == ["gsm8k", "mbpp"]
    assert api_as(Role.RESEARCHER).get("/options").json_body["benchmarks"] == ["gsm8k", "hotpotqa", "mbpp"]


def test_options_without_any_usable_pool_say_so(api_as) -> None:
    assert api_as().get("/options").json_body["default_pool_id"] is None


def test_recorded_items_are_one_row_per_item_filtered_and_paged(api_as) -> None:
    for model in ("small", "large"):
        recorded("rb", "rb.1", model, "What is one plus zero?")
        recorded("rb", "rb.2", model, "Name a prime number.")
    recorded("other", "o.1", "small", "What is one plus one?", benchmark="mmlu")
    api = api_as()
    page = api.get("/recorded-items?source=rb").json_body
    assert page["count"] == 2
    assert [(row["source"], row["item_id"]) for row in page["items"]] == [("rb", "rb.1"), ("rb", "rb.2")]
    assert [row["item_id"] for row in api.get("/recorded-items?search=ONE+PLUS").json_body["items"]] == ["o.1", "rb.1"]
    assert api.get("/recorded-items?benchmark=mmlu").json_body["count"] == 1
    assert [row["item_id"] for row in api.get("/recorded-items?limit=1&offset=1").json_body["items"]] == ["rb.1"]
    assert api.get("/recorded-items?search=" + "x" * 201).status_code == 422


def test_a_long_prompt_is_cut_to_a_preview(api_as) -> None:
    recorded("rb", "rb.9", "m", "y" * 5000)
    (row,) = api_as().get("/recorded-items").json_body["items"]
    assert row["prompt"] == row["question"] == "y" * 400


def test_an_item_is_told_apart_by_its_own_question_not_the_few_shot_examples(api_as) -> None:
    shots = "Q: 1+1?\nAnswer:\n2\n\nQ: 2+2?\nAnswer:\n4\n\n"
    recorded("rb", "rb.1", "m", shots + "Q: 3+3?\nAnswer:")
    recorded("rb", "rb.2", "m", "A passage.\n\nQ: what is it?")  # two blocks: not few-shot, kept whole
    rows = {row["item_id"]: row for row in api_as().get("/recorded-items").json_body["items"]}
    assert rows["rb.1"]["question"] == "Q: 3+3?\nAnswer:"
    assert rows["rb.1"]["prompt"].startswith("Q: 1+1?")
    assert rows["rb.2"]["question"] == "A passage.\n\nQ: what is it?"
    # A composite of them is titled by their questions, not by the shared examples.
    response = api_as().post("/tasks/composite", {"items": [{"source": "rb", "item_id": "rb.1"}]})
    assert response.status_code == 201, response.json_body
    assert Task.objects.get(pk=response.json_body["id"]).text == "Answer each part:\n\nPart 1: Q: 3+3?\nAnswer:"


def test_an_unknown_checker_is_422_and_nothing_is_saved(api_as) -> None:
    api = api_as()
    response = api.post("/tasks", {"text": "What is 6*7?", "gold_answer": "42", "checker": "astrology"})
    assert response.status_code == 422
    assert response.json_body["field"] == "checker"
    assert "gsm8k" in response.json_body["detail"]
    assert Task.objects.count() == 0
    assert api.post("/tasks", {"text": "What is 6*7?", "gold_answer": "42", "checker": "GSM8K"}).status_code == 201


def test_the_catalog_needs_a_sign_in(client) -> None:
    assert client.get("/api/options").status_code == 401
    assert client.get("/api/recorded-items").status_code == 401
