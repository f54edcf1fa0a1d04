"""The studio in Debian's Chromium (Playwright), against a live ASGI server and a real Celery
worker, on a replay pool of real recorded outcomes.

The front end must be built first (`make frontend`; `make test` does it)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, sync_playwright

from orchestrator.outcomes import read_outcomes, write_outcomes
from studio.models import User
from studio.services.calls import replay_reset
from studio.services.outcomes import load_prices, outcomes_import
from tests.support.asgi import asgi_server
from tests.support.worker import running_worker

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
OUTCOMES = Path(settings.BASE_DIR) / "data" / "outcomes"
PASSWORD = "browser-test-password"


@pytest.fixture(scope="module", autouse=True)
def sync_orm_beside_playwright() -> Iterator[None]:
    """Playwright's sync API runs an event loop in this thread while a browser is open; the
    ORM calls of these tests (and the database flush after each) are still plain synchronous
    code. Set for the whole module, so that it outlasts every test's teardown."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="module")
def browser(sync_orm_beside_playwright: None) -> Iterator[Browser]:
    """One Chromium per module. It must not outlive the module: while Playwright runs, its
    event loop would break every asyncio test after it (tests/conftest.py runs these last)."""
    if not (settings.FRONTEND_DIST / "index.html").is_file():
        pytest.fail("The front end is not built: run `make frontend` (make test builds it).")
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: apt-get install -y chromium (make test installs it as root).")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def live_url(transactional_db: None) -> Iterator[str]:
    with asgi_server() as url:
        yield url


@pytest.fixture
def worker(transactional_db: None, settings: object) -> Iterator[object]:
    """A real worker; replay calls take 1 to 2.5 s, so a run lasts long enough to watch."""
    settings.ORCHESTRA_REPLAY_LATENCY = "uniform:1,2.5"  # type: ignore[attr-defined]
    replay_reset()
    with running_worker(concurrency=8) as running:
        yield running
    replay_reset()


@pytest.fixture
def replay_demo(transactional_db: None) -> int:
    """The demo pool on the first 30 RouterBench items of the shipped, real recordings."""
    records = list(islice(read_outcomes(OUTCOMES / "routerbench.jsonl.gz"), 2000))
    items = list(dict.fromkeys(record.item_id for record in records))[:30]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "routerbench-slice.jsonl.gz"
        write_outcomes(path, [record for record in records if record.item_id in set(items)])
        report = outcomes_import(path=path, prices=load_prices(OUTCOMES / "prices.json"), pool_name="replay-demo")
    assert report.records > 0
    from studio.models import ModelPool

    return ModelPool.objects.get(name="replay-demo").pk


@pytest.fixture
def admin(transactional_db: None) -> User:
    return User.objects.create_user(username="ada", password=PASSWORD, role="admin", is_staff=True)


def screenshot(page: Page, name: str) -> None:
    """Into ORCHESTRA_SCREENSHOTS (docs/screenshots for the README) when set."""
    folder = os.environ.get("ORCHESTRA_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)
