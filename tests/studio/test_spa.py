"""Django serves the browser studio: index.html for every page path, never for the API."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def dist(tmp_path: Path, settings) -> Path:
    (tmp_path / "index.html").write_text("<!doctype html><div id=root></div>")
    settings.FRONTEND_DIST = tmp_path
    return tmp_path


@pytest.mark.parametrize("path", ["/", "/login", "/runs/12", "/runs/compare?a=1&b=2", "/no/such/page"])
def test_page_paths_get_the_single_page_app(client, dist: Path, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert b"<div id=root>" in response.content
    assert "no-cache" in response["Cache-Control"]
    assert "csrftoken" in response.cookies


@pytest.mark.parametrize("path", ["/api/no-such-route", "/static/assets/missing.js", "/v1/nothing"])
def test_api_and_static_paths_are_never_the_app(client, dist: Path, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert b"<div id=root>" not in response.content


def test_an_unbuilt_front_end_says_how_to_build_it(client, tmp_path: Path, settings) -> None:
    settings.FRONTEND_DIST = tmp_path / "missing"
    response = client.get("/runs")
    assert response.status_code == 503
    assert b"make up" in response.content
    assert b"/api/docs" in response.content
