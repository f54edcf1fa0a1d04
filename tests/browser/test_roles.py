"""Role gating in Chromium: each of the five roles (signed out, viewer, labeler, researcher,
admin) sees exactly the pages and the buttons it may use (docs/api.md, Roles), and a page
above the role, opened by its URL, says which role it needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from orchestrator.outcomes import prompt_key
from studio.models import RecordedOutcome, Role, Run, User
from tests.browser.axe import assert_accessible
from tests.browser.conftest import PASSWORD
from tests.browser.test_studio import sign_in
from tests.factories import AdmissibilityFactory, EndpointFactory, PrimitiveFactory, RunFactory, TaskFactory
from tests.support.preferences import finished_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RANK = {Role.VIEWER: 0, Role.LABELER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}


@dataclass(frozen=True)
class Gated:
    path: str
    heading: str  # the page's h1 when it is open to the role
    needs: Role
    nav: str  # its link in the navigation


PAGES = [
    Gated("/", "Submit a task", Role.VIEWER, "Submit"),
    Gated("/runs", "Runs", Role.VIEWER, "Runs"),
    Gated("/label", "Label", Role.LABELER, "Label"),
    Gated("/training", "Training", Role.RESEARCHER, "Training"),
    Gated("/evaluation", "Evaluation", Role.RESEARCHER, "Evaluation"),
    Gated("/collections", "Collections", Role.RESEARCHER, "Collections"),
    Gated("/pools", "Pools", Role.VIEWER, "Pools"),
]


def may(role: Role, needs: Role) -> bool:
    return RANK[role] >= RANK[needs]


@dataclass
class World:
    own_running: Run  # the signed-in user's run, still running
    other_running: Run  # someone else's run, still running
    own_ended: tuple[Run, Run]  # two ended runs of one task of the user's


def make_world(user: User) -> World:
    cell = AdmissibilityFactory(endpoint=EndpointFactory(), primitive=PrimitiveFactory(name="direct"))
    AdmissibilityFactory(endpoint=EndpointFactory(pool=cell.endpoint.pool), primitive=PrimitiveFactory(name="cot"))
    # A probe outcome of the pool's model: a calibration source for the admin to set.
    RecordedOutcome.objects.create(
        source="probe", item_id="probe.1", benchmark="gsm8k", domain="math", prompt="What is 1 + 1?",
        prompt_sha256=prompt_key("What is 1 + 1?"), model=cell.endpoint.model, primitive="direct", score=1.0,
    )  # fmt: skip
    stranger = User.objects.create_user(username="stranger", password=PASSWORD, role=Role.VIEWER)
    task = TaskFactory(owner=user)
    return World(
        own_running=RunFactory(task=TaskFactory(owner=user), status="running"),
        other_running=RunFactory(task=TaskFactory(owner=stranger), status="running"),
        own_ended=(finished_run(task, "4"), finished_run(task, "5")),
    )


def test_signed_out_every_page_asks_to_sign_in_first(page: Page, live_url: str) -> None:
    for gated in PAGES:
        page.goto(live_url + gated.path)
        expect(page).to_have_url(re.compile(r"/login\?next=" + re.escape(gated.path.replace("/", "%2F"))))
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    page.goto(f"{live_url}/runs/1")
    expect(page).to_have_url(re.compile(r"/login\?next=%2Fruns%2F1"))


@pytest.mark.parametrize("role", [Role.VIEWER, Role.LABELER, Role.RESEARCHER, Role.ADMIN])
def test_each_role_sees_its_pages_and_buttons_and_no_other(page: Page, live_url: str, role: Role) -> None:
    user = User.objects.create_user(username=f"the-{role.value}", password=PASSWORD, role=role)
    world = make_world(user)
    sign_in(page, live_url, user, then="/")

    # The navigation: the pages of the role, no other.
    nav = page.get_by_role("navigation", name="Main").get_by_role("link")
    expect(nav).to_have_text([gated.nav for gated in PAGES if may(role, gated.needs)])

    # Each page by its URL: drawn, or a plain sentence naming the role it needs.
    for gated in PAGES:
        page.goto(live_url + gated.path)
        if may(role, gated.needs):
            expect(page.locator("main h1").first).to_have_text(gated.heading)
            expect(page.get_by_test_id("role-gate")).to_have_count(0)
        else:
            gate = page.get_by_test_id("role-gate")
            expect(gate).to_contain_text(f"This page needs the {gated.needs.value} role or above")
            expect(gate).to_contain_text(f"you are a {role.value}")
            expect(page.get_by_role("heading", name="Not open to your role")).to_be_visible()

    pools_buttons(page, live_url, role)
    runs_buttons(page, live_url, role, world)
    if may(role, Role.LABELER):
        label_buttons(page, live_url, role)


def pools_buttons(page: Page, live_url: str, role: Role) -> None:
    """Admins toggle the admissibility grid's cells and set the calibration source; everyone else reads them."""
    page.goto(f"{live_url}/pools")
    grid = page.get_by_test_id("admissibility-grid")
    expect(grid).to_be_visible()
    cells = grid.locator("td.cell")
    expect(cells.first).to_be_visible()
    admin = role == Role.ADMIN
    expect(grid.get_by_role("button")).to_have_count(cells.count() if admin else 0)
    expect(page.get_by_role("link", name="Manage pools and endpoints in the Django admin")).to_have_count(int(admin))

    shown = page.get_by_test_id("calibration-source")
    expect(shown).to_have_text(re.compile(r"^None: "))
    source = page.get_by_role("textbox", name="Calibration source")
    expect(source).to_have_count(int(admin))
    if admin:
        source.fill("nowhere")
        source.press("Enter")
        expect(page.get_by_test_id("calibration").get_by_role("alert")).to_contain_text(
            "Source 'nowhere' has no recorded outcome for a model of pool"
        )
        assert_accessible(page, "pools calibration refused")
        source.fill("probe")
        source.press("Enter")
        expect(shown).to_have_text(re.compile(r"^probe: "))
        page.reload()
        expect(shown).to_have_text(re.compile(r"^probe: "))


def runs_buttons(page: Page, live_url: str, role: Role, world: World) -> None:
    """Everyone cancels their own run; researchers and admins anyone's, filter by owner, and pair runs."""
    everyone = may(role, Role.RESEARCHER)
    page.goto(f"{live_url}/runs")
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    expect(page.get_by_label("Owner")).to_have_count(int(everyone))

    page.goto(f"{live_url}/runs/{world.own_running.pk}")
    expect(page.get_by_role("button", name="Cancel run")).to_be_visible()
    page.goto(f"{live_url}/runs/{world.other_running.pk}")
    if everyone:
        expect(page.get_by_role("button", name="Cancel run")).to_be_visible()
    else:
        expect(page.get_by_text("This run does not exist or is not yours.")).to_be_visible()
        expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)

    a, b = world.own_ended
    page.goto(f"{live_url}/runs/compare?a={a.pk}&b={b.pk}")
    expect(page.get_by_role("heading", name=f"Run #{a.pk} vs run #{b.pk}")).to_be_visible()
    expect(page.get_by_text("answer").first).to_be_visible()
    expect(page.get_by_role("button", name="Pair for labeling")).to_have_count(int(everyone))


def label_buttons(page: Page, live_url: str, role: Role) -> None:
    """Labelers get the queue; researchers and admins also agreement, export and import."""
    everyone = may(role, Role.RESEARCHER)
    page.goto(f"{live_url}/label?tab=export")
    expect(page.get_by_role("heading", name="Label")).to_be_visible()
    expect(page.get_by_role("tab")).to_have_text(["Queue", "Agreement", "Pairs & export"] if everyone else [])
    expect(page.get_by_role("button", name="Import")).to_have_count(int(everyone))
    expect(page.get_by_role("link", name="Download preferences.jsonl")).to_have_count(int(everyone))
    if not everyone:
        expect(page.get_by_test_id("label-progress")).to_be_visible()  # the queue, whatever the URL asks


@pytest.mark.parametrize("width,height", [(390, 844), (1280, 800)])
def test_the_role_message_is_accessible(page: Page, live_url: str, width: int, height: int) -> None:
    viewer = User.objects.create_user(username="vic", password=PASSWORD, role=Role.VIEWER)
    page.set_viewport_size({"width": width, "height": height})
    sign_in(page, live_url, viewer, then="/training")
    expect(page.get_by_test_id("role-gate")).to_be_visible()
    assert_accessible(page, "role message")
