"""Paths nobody serves answer in their part's shape (studio/not_found.py): JSON under /api/,
OpenAI's error under /v1/, a plain 404 for a missing static file (a 500 before, with DEBUG)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_an_unknown_api_path_is_a_json_404(method: str) -> None:
    response = getattr(Client(), method)("/api/policies")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": f"No API endpoint at {method.upper()} /api/policies. The endpoints are listed at /api/docs."
    }


def test_a_known_api_path_still_answers() -> None:
    assert Client().get("/api/health").status_code in {200, 503}


def test_an_unknown_v1_path_is_an_openai_error() -> None:
    response = Client().get("/v1/embeddings")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == "not_found" and error["type"] == "invalid_request_error"
    assert error["message"].startswith("Unknown path /v1/embeddings: /v1 serves chat/completions")


@pytest.mark.parametrize("debug", [True, False])
def test_a_missing_static_file_is_a_404(settings: Any, debug: bool) -> None:
    settings.DEBUG = debug
    response = Client().get("/static/missing.js")
    assert response.status_code == 404
    if debug:  # servestatic's own message, which names where it looked
        assert b"did not find the file 'missing.js'" in response.content


def test_a_static_file_is_still_served() -> None:
    response = Client().get("/static/admin/css/base.css")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
