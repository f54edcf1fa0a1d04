"""Learned decomposition in the studio, in Chromium: a run that recovers from a lost part (its
slow sibling cancelled, its task replanned) as the live tree shows it, and a composite
evaluation started and read on the Evaluation page (axe on both, at both sizes)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from providers.scripted_openai import ScriptedOpenAI
from studio.models import User
from studio.services.runs import run_create
from studio.services.tasks import task_create
from tests.browser.conftest import screenshot
from tests.browser.test_studio import assert_accessible_at_both_sizes, sign_in
from tests.integration.test_recovery import Server, make_pool
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_live_tree_shows_a_replanned_task_its_cancelled_parts_and_the_earlier_plan(
    page: Page, live_url: str, worker: object, admin: User
) -> None:
    with ScriptedOpenAI(Server(slow_s=3.0)) as server:
        pool = make_pool(server, endpoints=1)
        task = task_create(owner=admin, text="Add 2+3 and 7/0.", decomposable=True)
        run = run_create(owner=admin, task_id=task.pk, pool_id=pool.pk)
        sign_in(page, live_url, admin, then=f"/runs/{run.pk}")
        expect(page.get_by_test_id("run-status")).to_have_attribute("data-status", "succeeded", timeout=40_000)
        wait_for_run(run.pk)
    node = page.get_by_test_id("tree-node")
    root = node.and_(page.locator('[data-key="root"]'))
    expect(root).to_have_class(re.compile(r"\breplanned\b"))
    expect(root.get_by_test_id("replanned")).to_have_attribute("title", re.compile("Divide 7 by zero"))
    for key in ("root.a", "root.b"):
        cancelled = node.and_(page.locator(f'[data-key="{key}"]'))
        expect(cancelled).to_have_attribute("data-status", "cancelled")
        expect(cancelled.get_by_test_id("earlier-round")).to_be_visible()
    for key in ("root.a_r1", "root.c_r1", "root.aggregate_r1"):
        expect(node.and_(page.locator(f'[data-key="{key}"]'))).to_have_attribute("data-status", "succeeded")
    expect(page.get_by_test_id("final-answer")).to_contain_text("25")
    page.get_by_test_id("run-tree").scroll_into_view_if_needed()
    screenshot(page, "recovery-tree")
    assert_accessible_at_both_sizes(page, "a recovered run (replanned, cancelled, earlier plan)")


def test_a_composite_evaluation_runs_from_the_evaluation_page(
    page: Page, live_url: str, worker: object, admin: User
) -> None:
    sign_in(page, live_url, admin, then="/evaluation")
    page.get_by_test_id("evaluation-kind").select_option("composites")
    page.get_by_label("Outcomes").select_option("reflexion.jsonl.gz")
    page.get_by_test_id("start-evaluation").click()
    table = page.get_by_test_id("composite-table")
    expect(table).to_be_visible(timeout=300_000)
    for method in ("always_delegate", "always_decompose", "decompose_knn", "decompose_mf", "decide_mf", "learned"):
        expect(table.locator(f'[data-method="{method}"]')).to_be_visible()
    expect(page.get_by_test_id("composite-rates").locator('[data-method="learned"]')).to_be_visible()
    expect(page.get_by_test_id("composite-decisions")).to_contain_text("at λ=0")
    expect(page.get_by_test_id("composite-assumptions")).to_contain_text("Assumptions")
    screenshot(page, "evaluation-composites")
    assert_accessible_at_both_sizes(page, "a composite evaluation (methods, split rates)")
