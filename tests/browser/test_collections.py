"""Collections in Chromium, against a real worker and a scripted OpenAI-compatible server: a
researcher's refusals show beside the fields they name, a collection started from the form is
followed live (polled), cancelled and resumed from the keyboard, and ends with its progress
bar full, each cell called once; axe at a phone's and a laptop's size."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from providers.scripted_openai import ScriptedOpenAI
from studio.models import CellStatus, Collection, CollectionCell, RecordedOutcome, User
from tests.browser.axe import assert_accessible
from tests.browser.conftest import screenshot
from tests.browser.test_studio import sign_in
from tests.workers.test_collection import Arithmetic, arithmetic_tasks, scripted_pool

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def wait_until_no_cell_is_in_flight(collection: Collection, timeout_s: float = 20) -> None:
    """A cancelled collection's calls already sent still end and are recorded; resume after them."""
    deadline = time.monotonic() + timeout_s
    cells = CollectionCell.objects.filter(collection=collection, status=CellStatus.STARTED)
    while cells.exists():
        assert time.monotonic() < deadline, "a cancelled collection's calls did not end"
        time.sleep(0.1)


def test_start_follow_cancel_and_resume_a_collection(page: Page, live_url: str, worker: object, admin: User) -> None:
    script = Arithmetic(delay_s=1.0)  # one call a second per endpoint: long enough to cancel mid-way
    with ScriptedOpenAI(script) as server:
        pool, _ = scripted_pool(server)  # two endpoints, "right" and "wrong", each with "direct"
        arithmetic_tasks(admin, 6)  # benchmark gsm8k, domain math
        sign_in(page, live_url, admin, then="/collections")
        expect(page.get_by_role("heading", name="Collections", level=1)).to_be_visible()
        expect(page.get_by_text("No collection yet")).to_be_visible()
        assert_accessible(page, "collections empty")

        form = page.get_by_role("form", name="Start a collection")
        form.get_by_role("combobox", name=re.compile(r"^Pool")).select_option(label=pool.name)
        pairs = page.get_by_test_id("collection-pairs")
        expect(pairs.get_by_role("checkbox")).to_have_count(2)
        for box in pairs.get_by_role("checkbox").all():
            expect(box).to_be_checked()

        # An unknown task id: the service's refusal, beside the task ids.
        form.get_by_role("radio", name="By task ids").check()
        ids = form.get_by_role("textbox", name="Task ids")
        ids.fill("999999")
        form.get_by_role("button", name="Start collection").click()
        tasks = page.get_by_test_id("collection-tasks")
        expect(tasks.get_by_role("alert")).to_have_text("Unknown task(s): 999999.")
        expect(ids).to_have_attribute("aria-invalid", "true")
        assert_accessible(page, "collections refused")

        # The tasks of a benchmark; a budget of $0: the validation's refusal, beside the budget.
        form.get_by_role("radio", name="By benchmark").check()
        form.get_by_role("combobox", name=re.compile(r"^Benchmark")).select_option("gsm8k")
        cells = page.get_by_test_id("collection-cells")
        expect(cells).to_have_text("6 task(s) × 2 pair(s) = 12 cell(s), one call each")
        form.get_by_role("textbox", name=re.compile(r"^Name")).fill("gsm8k probe")
        form.get_by_label("Calls in flight per endpoint").fill("1")
        budget = form.get_by_role("spinbutton", name="Budget ($)")
        budget.fill("0")
        budget.press("Enter")
        expect(form.get_by_role("alert")).to_contain_text("greater than 0")
        expect(budget).to_have_attribute("aria-invalid", "true")
        budget.fill("1")
        expect(form.get_by_role("alert")).to_have_count(0)
        budget.press("Enter")
        expect(form.get_by_role("status")).to_have_text(re.compile(r"^Collection #\d+ is queued\.$"))
        collection = Collection.objects.get(name="gsm8k probe")
        assert collection.pool_id == pool.pk and collection.max_concurrency == 1

        # Followed live: the list is polled while it works; cancelled from the keyboard mid-way.
        row = page.locator(f'[data-testid="job-row"][data-job-id="{collection.pk}"]')
        progress = row.get_by_test_id("collection-progress")
        expect(progress).to_have_attribute("data-done", re.compile(r"^([2-9]|10)$"), timeout=20_000)
        expect(row).to_have_attribute("data-status", "running")
        page.get_by_role("button", name=f"Cancel collection #{collection.pk}").focus()
        page.keyboard.press("Enter")
        expect(row).to_have_attribute("data-status", "cancelled")
        wait_until_no_cell_is_in_flight(collection)
        page.reload()
        done = int(progress.get_attribute("data-done") or 0)
        assert 2 <= done < 12

        # Resumed from the keyboard: only the cells left are called, and it ends with its bar full.
        page.get_by_role("button", name=f"Resume collection #{collection.pk}").focus()
        page.keyboard.press("Enter")
        expect(row).to_have_attribute("data-status", re.compile(r"^(queued|running)$"))
        expect(row).to_have_attribute("data-status", "succeeded", timeout=30_000)
        bar = row.get_by_role("progressbar", name=f"Collection #{collection.pk} progress")
        expect(bar).to_have_attribute("aria-valuenow", "12")
        expect(bar).to_have_attribute("aria-valuemax", "12")
        expect(progress).to_contain_text("12 of 12 cells")
        expect(row.get_by_test_id("collection-spend")).to_have_text("$0.18 of $1.00")
        expect(row).to_contain_text("12 cell(s) recorded.")
        expect(page.get_by_role("button", name=f"Cancel collection #{collection.pk}")).to_have_count(0)

    assert RecordedOutcome.objects.filter(source=collection.source).count() == 12
    assert len(script.calls) == 12 and set(script.calls.values()) == {1}  # none called twice
    assert_accessible(page, "collections")
    screenshot(page, "collections")
    page.set_viewport_size({"width": 390, "height": 844})
    # Wider than a phone, the table scrolls inside its box, a region the keyboard can focus.
    expect(page.get_by_role("region", name="Collections table")).to_have_attribute("tabindex", "0")
    overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the collections page is {overflow} px wider than a 390 px screen"
    assert_accessible(page, "collections")
    screenshot(page, "phone-collections")
