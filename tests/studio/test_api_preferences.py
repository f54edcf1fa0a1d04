"""The preference API through the URL: queue, labels, pairs, agreement, JSONL export and import."""

from __future__ import annotations

import json
from typing import Any

import pytest

from studio.models import PreferenceLabel, PreferencePair, Role, Run, Task
from studio.selectors.preferences import display_swap
from tests.conftest import Api
from tests.factories import RunFactory, TaskFactory
from tests.support.preferences import finished_run, make_pair

pytestmark = pytest.mark.django_db


def post_jsonl(api: Api, text: str, content_type: str = "application/x-ndjson") -> Any:
    response = api.client.post("/api/preferences/import", data=text.encode(), content_type=content_type)
    response.json_body = response.json()  # type: ignore[attr-defined]
    return response


def test_viewers_may_not_label(api_as) -> None:
    pair = make_pair()
    viewer = api_as(Role.VIEWER)
    assert viewer.get("/preferences/queue").status_code == 403
    response = viewer.post(f"/preferences/pairs/{pair.pk}/labels", {"verdict": "a"})
    assert response.status_code == 403
    assert response.json_body["detail"] == "This needs the labeler role or above; you are a viewer."
    assert not PreferenceLabel.objects.exists()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/preferences/pairs"),
        ("post", "/preferences/pairs"),
        ("get", "/preferences/agreement"),
        ("get", "/preferences/export"),
        ("post", "/preferences/import"),
    ],
)
def test_labelers_may_not_manage_pairs(api_as, method: str, path: str) -> None:
    response = api_as(Role.LABELER).call(method, path, {} if method == "post" else None)
    assert response.status_code == 403, response.json_body


def test_a_labeler_works_through_the_queue(api_as, make_user) -> None:
    user = make_user(Role.LABELER)
    api = api_as(user=user)
    first, second = make_pair(), make_pair()
    queue = api.get("/preferences/queue", limit=10).json_body
    assert queue["progress"] == {"labeled": 0, "total": 2, "remaining": 2}
    # Without a reward model: oldest first, unscored.
    assert [item["pair_id"] for item in queue["items"]] == [first.pk, second.pk]
    item = queue["items"][0]
    assert item["margin"] is None and item["label_count"] == 0 and item["source"] == "human"
    assert item["swap"] == display_swap(pair_id=first.pk, user_id=user.pk)
    assert item["task"] == {"id": first.task_id, "text": first.task.text, "benchmark": "arith", "domain": "math"}
    assert item["run_a"]["id"] == first.run_a_id and item["run_a"]["final_answer"] == "42"
    assert item["run_b"]["final_answer"] == "41"
    assert item["run_a"]["plan"]["nodes"] == [
        {"key": "root", "model": "gpt-4o", "primitive": "cot", "kind": "root", "depends_on": []}
    ]

    labeled = api.post(f"/preferences/pairs/{first.pk}/labels", {"verdict": "b", "seconds_spent": 31.5})
    assert labeled.status_code == 201
    assert {k: labeled.json_body[k] for k in ("pair_id", "labeler", "verdict", "seconds_spent")} == {
        "pair_id": first.pk,
        "labeler": user.username,
        "verdict": "b",
        "seconds_spent": 31.5,
    }
    relabeled = api.post(f"/preferences/pairs/{first.pk}/labels", {"verdict": "tie"})
    assert relabeled.status_code == 200 and relabeled.json_body["id"] == labeled.json_body["id"]
    queue = api.get("/preferences/queue").json_body
    assert [item["pair_id"] for item in queue["items"]] == [second.pk]
    assert queue["progress"] == {"labeled": 1, "total": 2, "remaining": 1}


def test_a_bad_label_is_422_and_an_unknown_pair_404(api_as) -> None:
    api = api_as(Role.LABELER)
    pair = make_pair()
    response = api.post(f"/preferences/pairs/{pair.pk}/labels", {"verdict": "maybe"})
    assert response.status_code == 422 and response.json_body["errors"][0]["field"] == "verdict"
    assert api.post(f"/preferences/pairs/{pair.pk}/labels", {"verdict": "a", "seconds_spent": -3}).status_code == 422
    missing = api.post(f"/preferences/pairs/{pair.pk + 100}/labels", {"verdict": "a"})
    assert (
        missing.status_code == 404 and missing.json_body["detail"] == f"Preference pair {pair.pk + 100} does not exist."
    )


def test_a_researcher_creates_and_lists_pairs(api_as) -> None:
    api = api_as(Role.RESEARCHER)
    task = TaskFactory()
    a, b = finished_run(task), finished_run(task)
    created = api.post("/preferences/pairs", {"run_a_id": a.pk, "run_b_id": b.pk})
    assert created.status_code == 201, created.json_body
    assert {k: created.json_body[k] for k in ("task_id", "run_a_id", "run_b_id", "source", "label_count")} == {
        "task_id": task.pk,
        "run_a_id": a.pk,
        "run_b_id": b.pk,
        "source": "human",
        "label_count": 0,
    }
    again = api.post("/preferences/pairs", {"run_a_id": b.pk, "run_b_id": a.pk})
    assert again.status_code == 409 and again.json_body["pair_id"] == created.json_body["id"]
    other = finished_run(TaskFactory())
    mixed = api.post("/preferences/pairs", {"run_a_id": a.pk, "run_b_id": other.pk})
    assert mixed.status_code == 422 and "two runs of the same task" in mixed.json_body["detail"]
    unfinished = RunFactory(task=task, status="pending")
    pending = api.post("/preferences/pairs", {"run_a_id": a.pk, "run_b_id": unfinished.pk})
    assert pending.status_code == 422 and pending.json_body["field"] == "run_b_id"

    make_pair(source="node_level", metadata={"preferred": "b"})
    listed = api.get("/preferences/pairs", limit=1).json_body
    assert listed["count"] == 2 and len(listed["items"]) == 1
    human = api.get("/preferences/pairs", source="human").json_body
    assert [p["id"] for p in human["items"]] == [created.json_body["id"]]
    assert api.get("/preferences/pairs", source="nonsense").status_code == 422


def test_agreement_report(api_as, make_user) -> None:
    ann, bob = make_user(Role.LABELER, username="ann"), make_user(Role.LABELER, username="bob")
    # yes/yes 2, yes/no 1, no/no 1 as a/b: p_o = 3/4, ann a 3/4, bob a 2/4; p_e = (3*2 + 1*2)/16 = 1/2; κ = 1/2.
    for ann_says, bob_says in (("a", "a"), ("a", "a"), ("a", "b"), ("b", "b")):
        pair = make_pair()
        PreferenceLabel.objects.create(pair=pair, labeler=ann, verdict=ann_says)
        PreferenceLabel.objects.create(pair=pair, labeler=bob, verdict=bob_says)
    report = api_as(Role.RESEARCHER).get("/preferences/agreement", min_overlap=4).json_body
    assert report["pairs"] == 4 and report["labels"] == 8 and report["labelers"] == 2
    assert report["cohen"] == [{"labeler_a": "ann", "labeler_b": "bob", "overlap": 4, "kappa": pytest.approx(0.5)}]
    # Fleiss (Scott's π for two): p_a = 5/8, p_e = 34/64, P-bar = 3/4 -> κ = 7/15.
    assert report["fleiss"] == {"raters": 2, "pairs": 4, "kappa": pytest.approx(7 / 15)}


def test_export_then_import_round_trip(api_as, make_user) -> None:
    api = api_as(Role.RESEARCHER)
    pair = make_pair()
    PreferenceLabel.objects.create(pair=pair, labeler=make_user(Role.LABELER, username="ann"), verdict="b")
    make_pair()  # unlabeled: not exported
    response = api.client.get("/api/preferences/export")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == 'attachment; filename="preferences.jsonl"'
    assert (response["X-Orchestra-Exported"], response["X-Orchestra-Skipped"]) == ("1", "unlabeled=1")
    text = response.content.decode()
    (record,) = [json.loads(line) for line in text.splitlines()]
    assert (record["prompt"], record["chosen"], record["rejected"], record["source"]) == (
        pair.task.text,
        "41",
        "42",
        "human",
    )
    assert record["chosen_plan"]["nodes"][0]["model"] == "llama-3-8b"
    assert record["labels"] == [{"labeler": "ann", "verdict": "b"}] and record["pair_id"] == pair.pk

    imported = post_jsonl(api, text)
    assert imported.status_code == 201, imported.json_body
    assert imported.json_body == {"pairs": 1, "tasks": 1, "runs": 2, "by_source": {"human": 1}}
    again = api.client.get("/api/preferences/export").content.decode().splitlines()
    assert len(again) == 2
    copy = json.loads(again[1])
    assert {k: copy[k] for k in ("prompt", "chosen", "rejected", "chosen_plan", "rejected_plan")} == {
        k: record[k] for k in ("prompt", "chosen", "rejected", "chosen_plan", "rejected_plan")
    }


def test_an_import_with_bad_lines_is_422_naming_them_and_writes_nothing(api_as) -> None:
    good = json.dumps({"prompt": "What is 2+2?", "chosen": "4", "rejected": "5", "source": "human"})
    text = "\n".join(
        [
            good,
            '{"prompt": "What is 2+2?", "chosen": "4"',
            good,
            json.dumps({"prompt": "p", "rejected": "5", "source": "human"}),
            json.dumps({"prompt": "p", "chosen": "4", "rejected": "5", "source": "human", "chosen_plan": {}}),
        ]
    )
    before = (Task.objects.count(), Run.objects.count(), PreferencePair.objects.count())
    response = post_jsonl(api_as(Role.RESEARCHER), text, content_type="text/plain")
    assert response.status_code == 422
    body = response.json_body
    assert [e["line"] for e in body["errors"]] == [2, 4, 5]
    assert body["detail"].startswith("3 invalid lines: line 2: not valid JSON")
    assert 'line 4: "chosen" is missing' in body["detail"] and "line 5:" in body["detail"]
    assert body["field"] == "body"
    assert (Task.objects.count(), Run.objects.count(), PreferencePair.objects.count()) == before


def test_an_import_needs_jsonl_text(api_as) -> None:
    api = api_as(Role.RESEARCHER)
    wrong_type = post_jsonl(api, "{}", content_type="application/xml")
    assert wrong_type.status_code == 415 and "application/x-ndjson" in wrong_type.json_body["detail"]
    response = api.client.post("/api/preferences/import", data=b"\xff\xfe", content_type="application/x-ndjson")
    assert response.status_code == 422 and response.json()["detail"] == "The request body is not UTF-8 text."
    empty = post_jsonl(api, "\n\n")
    assert empty.status_code == 422 and empty.json_body["detail"] == "The file holds no preference records."


def test_a_labeler_undoes_the_last_verdict_and_the_pair_is_back_in_the_queue(api_as, make_user) -> None:
    user = make_user(Role.LABELER)
    api = api_as(user=user)
    pair, other = make_pair(), make_pair()
    assert api.post(f"/preferences/pairs/{pair.pk}/labels", {"verdict": "a"}).status_code == 201
    assert [item["pair_id"] for item in api.get("/preferences/queue").json_body["items"]] == [other.pk]

    assert api.delete(f"/preferences/pairs/{pair.pk}/labels").status_code == 204
    assert not PreferenceLabel.objects.filter(pair=pair, labeler=user).exists()
    queue = api.get("/preferences/queue").json_body
    assert [item["pair_id"] for item in queue["items"]] == [pair.pk, other.pk]
    assert queue["progress"]["labeled"] == 0


def test_undo_takes_back_only_your_own_verdict(api_as, make_user) -> None:
    pair = make_pair()
    mine, theirs = make_user(Role.LABELER), make_user(Role.LABELER)
    api_as(user=theirs).post(f"/preferences/pairs/{pair.pk}/labels", {"verdict": "b"})
    response = api_as(user=mine).delete(f"/preferences/pairs/{pair.pk}/labels")
    assert response.status_code == 404
    assert response.json_body["detail"] == f"You have no verdict on pair {pair.pk} to undo."
    assert PreferenceLabel.objects.filter(pair=pair, labeler=theirs).exists()
    missing = api_as(user=mine).delete("/preferences/pairs/999999/labels")
    assert (missing.status_code, missing.json_body["detail"]) == (404, "Preference pair 999999 does not exist.")
    assert api_as(Role.VIEWER).delete(f"/preferences/pairs/{pair.pk}/labels").status_code == 403
