"""Evaluations through the API: checked input, roles, and the list and detail shapes."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.offline.items import METHOD_NAMES
from studio.models import Checkpoint, EvaluationRun, JobStatus, Role
from studio.services.evaluations import PRESETS

pytestmark = pytest.mark.django_db


def test_a_researcher_queues_a_quick_evaluation(api_as, django_capture_on_commit_callbacks: Any) -> None:
    api = api_as(Role.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        created = api.post("/evaluations", {"preset": "quick", "seed": 2, "methods": ["learned", "knn"]})
    assert created.status_code == 201, created.json_body
    body = created.json_body
    assert (body["status"], body["progress"], body["checkpoint_id"]) == ("queued", 0.0, None)
    assert len(callbacks) == 1  # sent to queue `training` once committed
    config = body["config"]
    assert config["outcomes"] == ["llmrouter.jsonl.gz"]  # the default
    assert (config["seed"], config["methods"]) == (2, ["learned", "knn"])
    assert config["max_train_items"] == PRESETS["quick"]["max_train_items"]
    assert config["learned"] == PRESETS["quick"]["learned"]


def test_the_full_preset_caps_nothing_and_explicit_sizes_win(api_as) -> None:
    api = api_as(Role.RESEARCHER)
    full = api.post("/evaluations", {"preset": "full", "outcomes": ["routerbench.jsonl.gz"]}).json_body["config"]
    assert (full["max_train_items"], full["max_test_items"], full["learned"]) == (None, None, None)
    assert full["methods"] == list(METHOD_NAMES)  # every method
    learned = {"sft": {"epochs": 1}, "rl": {"iterations": 0}}
    sized = api.post("/evaluations", {"max_test_items": 50, "learned": learned}).json_body["config"]
    assert (sized["max_test_items"], sized["max_train_items"], sized["learned"]) == (50, 2000, learned)


def test_a_checkpoint_lends_its_training_config(api_as) -> None:
    config = {"sft": {"epochs": 3}, "rl": {"iterations": 5}, "knobs": [0.0, 1.0], "seed": 4}
    checkpoint = Checkpoint.objects.create(kind="policy", name="p", path="checkpoints/p.pt", config=config)
    created = api_as(Role.RESEARCHER).post("/evaluations", {"checkpoint_id": checkpoint.pk})
    assert created.status_code == 201, created.json_body
    assert created.json_body["checkpoint_id"] == checkpoint.pk
    assert created.json_body["config"]["learned"] == {
        "sft": {"epochs": 3},
        "rl": {"iterations": 5},
        "knobs": [0.0, 1.0],
    }


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"outcomes": ["nope.jsonl.gz", "llmrouter.jsonl.gz"]}, "outcomes", "nope.jsonl.gz"),
        ({"train": ["missing.jsonl.gz"]}, "train", "missing.jsonl.gz"),
        ({"methods": ["knn", "magic"]}, "methods", "magic"),
        ({"probe": 5}, "probe", "needs train"),
        ({"learned": {"sft": {"epochz": 2}}}, "learned", "not valid"),
        ({"preset": "huge"}, "preset", ""),
        ({"seed": -1}, "seed", ""),
        ({"max_test_items": 0}, "max_test_items", ""),
        ({"collections": [999_999]}, "collections", "Unknown collection(s): 999999"),
    ],
)
def test_bad_input_is_422_naming_it_and_nothing_is_queued(api_as, body: dict[str, Any], field: str, words: str) -> None:
    response = api_as(Role.RESEARCHER).post("/evaluations", body)
    assert response.status_code == 422, response.json_body
    fields = [response.json_body.get("field")] + [e["field"] for e in response.json_body.get("errors", [])]
    assert field in fields
    assert words in response.json_body["detail"]
    assert EvaluationRun.objects.count() == 0


def test_a_checkpoint_that_is_not_a_policy_is_refused(api_as) -> None:
    rm = Checkpoint.objects.create(kind="reward_model", name="rm", path="checkpoints/rm.pt")
    api = api_as(Role.RESEARCHER)
    assert api.post("/evaluations", {"checkpoint_id": rm.pk}).status_code == 422
    assert api.post("/evaluations", {"checkpoint_id": 987654}).status_code == 404
    assert EvaluationRun.objects.count() == 0


def test_viewers_and_labelers_may_not_evaluate(api_as, anonymous_api) -> None:
    for role in (Role.VIEWER, Role.LABELER):
        api = api_as(role)
        assert api.post("/evaluations", {}).status_code == 403
        assert api.get("/evaluations").status_code == 403
        assert api.get("/evaluations/options").status_code == 403
    assert anonymous_api.get("/evaluations").status_code == 401
    assert EvaluationRun.objects.count() == 0


def test_list_is_newest_first_without_reports_and_detail_has_the_report(api_as) -> None:
    older = EvaluationRun.objects.create(status=JobStatus.SUCCEEDED, progress=1.0, report={"methods": {"knn": {}}})
    newer = EvaluationRun.objects.create(status=JobStatus.RUNNING, progress=0.4, message="fitting knn (7 of 10)")
    api = api_as(Role.RESEARCHER)
    listed = api.get("/evaluations", limit=1).json_body
    assert listed["count"] == 2
    assert [item["id"] for item in listed["items"]] == [newer.pk]
    assert "report" not in listed["items"][0]
    assert listed["items"][0]["message"] == "fitting knn (7 of 10)"
    detail = api.get(f"/evaluations/{older.pk}").json_body
    assert (detail["status"], detail["report"]) == ("succeeded", {"methods": {"knn": {}}})
    missing = api.get("/evaluations/987654")
    assert missing.status_code == 404
    assert "no evaluation" in missing.json_body["detail"]


def test_options_name_presets_files_and_methods(api_as) -> None:
    options = api_as(Role.RESEARCHER).get("/evaluations/options").json_body
    assert set(options["presets"]) == {"quick", "full"}
    assert "llmrouter.jsonl.gz" in options["outcomes"]
    assert options["default_outcomes"] == ["llmrouter.jsonl.gz"]
    assert options["methods"][0] == "learned"


def test_a_composite_evaluation_is_checked_and_completed_from_its_preset(api_as) -> None:
    from studio.services.evaluations import COMPOSITE_PRESETS

    api = api_as(Role.RESEARCHER)
    created = api.post("/evaluations", {"kind": "composites", "sensitivity": [0.1, 0.01], "methods": ["learned"]})
    assert created.status_code == 201, created.json_body
    config = created.json_body["config"]
    assert config["kind"] == "composites" and config["outcomes"] == ["routerbench.jsonl.gz", "llmrouter.jsonl.gz"]
    assert (config["train_count"], config["test_count"]) == (300, 150)
    assert config["learned"] == COMPOSITE_PRESETS["quick"]["learned"] and config["sensitivity"] == [0.01, 0.1]
    options = api.get("/evaluations/options").json_body["composites"]
    assert "learned" in options["methods"] and set(options["presets"]) == {"quick", "full"}
    for body, field, words in (
        ({"kind": "composites", "methods": ["knn"]}, "methods", "knn"),
        ({"kind": "composites", "train": ["llmrouter.jsonl.gz"]}, "train", "own split"),
        ({"kind": "composites", "sensitivity": [2]}, "sensitivity", "within [0, 1]"),
        ({"kind": "items", "penalty": 0.1}, "penalty", "composite evaluations"),
        ({"kind": "graphs"}, "kind", ""),
    ):
        response = api.post("/evaluations", body)
        assert response.status_code == 422, (body, response.json_body)
        fields = [response.json_body.get("field")] + [e["field"] for e in response.json_body.get("errors", [])]
        assert field in fields and words in response.json_body["detail"], response.json_body
    assert EvaluationRun.objects.count() == 1
