"""Every page of the studio at a phone's size (390 x 844) and a laptop's (1280 x 800), with
real runs on the replay pool: nothing is wider than the screen, and axe-core finds no
serious or critical accessibility violation (tests/browser/axe.py), in each state a user
meets: a form's other mode, a run's node panel and event log, each labeling tab."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from studio.models import PreferencePair, User
from studio.services.runs import run_create
from studio.services.tasks import task_create_composite
from tests.browser.axe import assert_accessible
from tests.browser.conftest import screenshot
from tests.browser.test_studio import first_items, sign_in
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def open_event_log(page: Page) -> None:
    page.locator("summary", has_text="Event log").click()
    expect(page.get_by_test_id("event-log")).to_be_visible()


def open_a_node(page: Page) -> None:
    page.get_by_test_id("tree-node").first.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("node-panel")).to_be_visible()


def items_mode(page: Page) -> None:
    page.get_by_test_id("mode-items").click()
    expect(page.get_by_test_id("item-add").first).to_be_visible()


def benchmark_mode(page: Page) -> None:
    """Tasks of a benchmark made for real: the made note and its links are on the page."""
    page.get_by_test_id("mode-benchmark").click()
    page.get_by_test_id("benchmark-name").select_option("gsm8k")
    page.get_by_test_id("benchmark-n").fill("3")
    page.get_by_test_id("make-tasks").click()
    expect(page.get_by_test_id("benchmark-made")).to_contain_text("3 in all")


@dataclass
class State:
    path: str
    name: str
    then: Callable[[Page], None] | None = None


STATES = [
    State("/", "submit"),
    State("/", "submit-items", items_mode),
    State("/", "submit-benchmark", benchmark_mode),
    State("/?task={task}", "run-again"),
    State("/runs", "runs"),
    State("/runs/{run}", "runs-id"),
    State("/runs/{run}", "run-event-log", open_event_log),
    State("/runs/{run}", "run-node-panel", open_a_node),
    State("/runs/compare?a={run}&b={other}", "runs-compare"),
    State("/label", "label"),
    State("/label?tab=agreement", "label-agreement"),
    State("/label?tab=export", "label-export"),
    State("/training", "training"),
    State("/evaluation", "evaluation"),
    State("/collections", "collections"),
    State("/pools", "pools"),
    State("/no-such-page", "not-found"),
]


@pytest.mark.parametrize("width,height", [(390, 844), (1280, 800)])
def test_every_page_fits_the_screen_and_passes_axe(
    page: Page, live_url: str, worker: object, replay_demo: int, admin: User, width: int, height: int
) -> None:
    task = task_create_composite(owner=admin, items=[("routerbench", item) for item in first_items(3)])
    started = [run_create(owner=admin, task_id=task.pk, pool_id=replay_demo, cost_preference=lam) for lam in (0.0, 1.0)]
    run, other = (wait_for_run(r.pk, 60) for r in started)
    PreferencePair.objects.create(task=task, run_a=run, run_b=other, source="human")  # for the labeling queue
    page.set_viewport_size({"width": width, "height": height})

    page.goto(f"{live_url}/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert_accessible(page, "login")
    sign_in(page, live_url, admin, then="/pools")
    for state in STATES:
        page.goto(live_url + state.path.format(run=run.pk, other=other.pk, task=task.pk))
        expect(page.locator("main h1, main h2").first).to_be_visible()
        page.wait_for_load_state("networkidle")
        if state.then:
            state.then(page)
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{state.name} is {overflow} px wider than a {width} px screen"
        assert_accessible(page, state.name)
        if width < 500:
            screenshot(page, f"phone-{state.name}")
