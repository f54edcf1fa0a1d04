from __future__ import annotations

import pytest
from django.test import override_settings

from studio.models import Role, Task
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def test_create_and_read_a_task(api_as) -> None:
    api = api_as(Role.VIEWER)
    created = api.post("/tasks", {"text": "What is 12*7?", "gold_answer": "84", "domain": "math", "benchmark": "gsm8k"})
    assert created.status_code == 201
    task_id = created.json_body["id"]
    detail = api.get(f"/tasks/{task_id}").json_body
    assert detail["text"] == "What is 12*7?"
    assert detail["gold_answer"] == "84"
    assert detail["domain"] == "math"


@override_settings(ORCHESTRA_MAX_TASK_CHARS=20)
def test_task_text_over_the_limit_is_422(api_as) -> None:
    response = api_as().post("/tasks", {"text": "x" * 21})
    assert response.status_code == 422
    assert response.json_body["field"] == "text"
    assert "limit is 20" in response.json_body["detail"]
    assert Task.objects.count() == 0


def test_empty_text_and_unknown_domain_are_422(api_as) -> None:
    api = api_as()
    assert api.post("/tasks", {"text": "   "}).status_code == 422
    response = api.post("/tasks", {"text": "ok", "domain": "astrology"})
    assert response.status_code == 422
    assert response.json_body["errors"][0]["field"] == "domain"
    response = api.post("/tasks", {})
    assert response.json_body["errors"][0]["field"] == "text"


def test_viewers_see_only_their_tasks(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    mine = TaskFactory(owner=me)
    theirs = TaskFactory()
    api = api_as(user=me)
    assert [t["id"] for t in api.get("/tasks").json_body["items"]] == [mine.pk]
    assert api.get(f"/tasks/{theirs.pk}").status_code == 404

    researcher = api_as(Role.RESEARCHER)
    assert researcher.get("/tasks").json_body["count"] == 2
    assert researcher.get(f"/tasks/{theirs.pk}").status_code == 200


def test_task_list_filters_and_pages(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    for n in range(5):
        TaskFactory(owner=me, text=f"apples {n}", benchmark="gsm8k")
    TaskFactory(owner=me, text="pears", benchmark="mbpp")
    api = api_as(user=me)
    assert api.get("/tasks", search="apple").json_body["count"] == 5
    assert api.get("/tasks", benchmark="mbpp").json_body["count"] == 1
    page = api.get("/tasks", limit=2, offset=0).json_body
    assert page["count"] == 6 and len(page["items"]) == 2
    assert api.get("/tasks", limit=0).status_code == 422


def test_invalid_utf8_is_400(api_as) -> None:
    api = api_as()
    response = api.client.post("/api/tasks", b'{"text": "\xff\xfe"}', content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]
    assert Task.objects.count() == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_an_oversized_body_is_413(api_as) -> None:
    api = api_as()
    response = api.post("/tasks", {"text": "x" * 2000})
    assert response.status_code == 413
    assert response.json_body["detail"] == "The request body is too large."
    assert Task.objects.count() == 0


def test_tasks_from_a_benchmark(api_as, make_user) -> None:
    me = make_user(Role.VIEWER)
    api = api_as(user=me)
    response = api.post("/tasks/from-benchmark", {"benchmark": "hotpotqa", "n": 4, "seed": 2})
    assert response.status_code == 201
    body = response.json_body
    assert (body["created"], body["existing"], len(body["task_ids"])) == (4, 0, 4)
    task = api.get(f"/tasks/{body['task_ids'][0]}").json_body
    assert (task["checker"], task["benchmark"], task["domain"]) == ("hotpotqa", "hotpotqa", "multi_hop")
    assert task["metadata"]["item_id"].startswith("hotpotqa/dev/") and task["gold_answer"]
    again = api.post("/tasks/from-benchmark", {"benchmark": "hotpotqa", "n": 5, "seed": 2}).json_body
    assert (again["created"], again["existing"], again["task_ids"][:4]) == (1, 4, body["task_ids"])


def test_tasks_from_a_benchmark_refuses_bad_input_with_a_sentence(api_as) -> None:
    api = api_as()
    response = api.post("/tasks/from-benchmark", {"benchmark": "chess", "n": 2})
    assert response.status_code == 422
    assert response.json_body["field"] == "benchmark"
    assert response.json_body["detail"].startswith("Unknown benchmark 'chess'; use one of gsm8k, humaneval,")
    response = api.post("/tasks/from-benchmark", {"benchmark": "humaneval", "n": 500})
    assert (response.status_code, response.json_body["field"]) == (422, "n")
    assert "n must be within 1 and 164" in response.json_body["detail"]
    assert api.post("/tasks/from-benchmark", {"benchmark": "gsm8k", "n": 0}).json_body["field"] == "n"
    assert api.post("/tasks/from-benchmark", {"benchmark": "gsm8k", "n": 1, "k": 3}).status_code == 422
    assert Task.objects.count() == 0


def post_jsonl(api, text: str, content_type: str = "application/x-ndjson"):
    response = api.client.post("/api/tasks/import", text.encode(), content_type=content_type)
    response.json_body = response.json()
    return response


GOOD_LINE = '{"prompt": "What is 6*7?", "gold": "42", "checker": "gsm8k", "domain": "math"}'


def test_import_tasks_from_jsonl(api_as) -> None:
    api = api_as()
    response = post_jsonl(api, f"{GOOD_LINE}\n\n{GOOD_LINE.replace('42', '43')}\n")
    assert response.status_code == 201
    assert response.json_body["created"] == 2
    golds = [api.get(f"/tasks/{pk}").json_body["gold_answer"] for pk in response.json_body["task_ids"]]
    assert golds == ["42", "43"]


def test_importing_the_same_tasks_again_adds_none(api_as) -> None:
    api = api_as()
    first = post_jsonl(api, f"{GOOD_LINE}\n{GOOD_LINE}\n{GOOD_LINE.replace('42', '43')}\n").json_body
    assert (first["created"], first["existing"]) == (2, 1)  # a line repeated in the file is one task
    assert first["task_ids"][0] == first["task_ids"][1] != first["task_ids"][2]
    again = post_jsonl(api, f"{GOOD_LINE.replace('42', '43')}\n{GOOD_LINE.replace('42', '44')}\n").json_body
    assert (again["created"], again["existing"]) == (1, 1)
    assert again["task_ids"][0] == first["task_ids"][2]
    assert Task.objects.count() == 3
    # Another user's same task is theirs: it is made for this one.
    other = post_jsonl(api_as(), GOOD_LINE).json_body
    assert (other["created"], other["existing"]) == (1, 0) and Task.objects.count() == 4


def test_a_bad_jsonl_line_writes_nothing_and_is_named(api_as) -> None:
    api = api_as()
    response = post_jsonl(api, f'{GOOD_LINE}\n{{"prompt": "x"}}\n{GOOD_LINE.replace("math", "cooking")}')
    assert response.status_code == 422
    assert response.json_body["detail"].startswith('2 invalid lines: line 2: "gold" is missing')
    assert [error["line"] for error in response.json_body["errors"]] == [2, 3]
    assert Task.objects.count() == 0
    response = post_jsonl(api, GOOD_LINE, content_type="application/json")
    assert response.status_code == 415 and "application/x-ndjson" in response.json_body["detail"]
    assert Task.objects.count() == 0


def test_creating_tasks_in_bulk_needs_a_login(anonymous_api) -> None:
    assert anonymous_api.post("/tasks/from-benchmark", {"benchmark": "gsm8k", "n": 1}).status_code == 401
    assert post_jsonl(anonymous_api, GOOD_LINE).status_code == 401
