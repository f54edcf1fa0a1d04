"""A user's path through the studio in Chromium: sign in, submit a composite task, watch its
tree complete live, open a node, lose the connection mid-run and resume with no gap, label
a pair with the keyboard only, train, and read the evaluation (axe on both, at a phone's
and a laptop's size; every other page in test_pages.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from studio.models import Checkpoint, PreferenceLabel, PreferencePair, Run, RunEvent, User
from studio.services.runs import run_create
from tests.browser.axe import assert_accessible
from tests.browser.conftest import PASSWORD, screenshot
from tests.support.runs import wait_for_run

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def sign_in(page: Page, url: str, user: User, then: str = "/runs") -> None:
    page.goto(f"{url}{then}")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    screenshot(page, "login")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{url}{then}")


def event_seqs(page: Page) -> list[int]:
    return [int(seq) for seq in page.locator("[data-seq]").evaluate_all("els => els.map(e => e.dataset.seq)")]


def test_submit_watch_reconnect_and_open_a_node(
    page: Page, live_url: str, worker: object, replay_demo: int, admin: User
) -> None:
    sign_in(page, live_url, admin)

    # Submit: a composite task of four recorded RouterBench items.
    page.goto(f"{live_url}/")
    page.get_by_test_id("mode-items").click()
    for _ in range(4):
        page.get_by_test_id("item-add").and_(page.get_by_text("Add", exact=True)).first.click()
    screenshot(page, "submit")
    page.get_by_test_id("submit-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+$"))
    run_id = int(page.url.rsplit("/", 1)[1])

    # The tree grows live: the root first, then its four subtasks as the events arrive.
    tree = page.get_by_test_id("run-tree")
    expect(tree).to_be_visible()
    expect(page.get_by_test_id("connection-state")).to_have_attribute("data-state", "live")
    running = page.locator('[data-testid="tree-node"][data-status="running"]')
    expect(running.first).to_be_visible()  # seen mid-run, not after the fact
    expect(page.locator('[data-testid="tree-node"][data-key^="root.item"]')).to_have_count(4)

    # Lose the connection mid-run; events go on server-side; the page resumes with no gap.
    page.context.set_offline(True)
    expect(page.get_by_test_id("connection-state")).to_have_attribute("data-state", "offline")
    page.wait_for_timeout(1500)
    page.context.set_offline(False)
    expect(page.get_by_test_id("run-status")).to_have_attribute("data-status", "succeeded", timeout=40_000)
    tree.scroll_into_view_if_needed()
    screenshot(page, "live-run")

    run = Run.objects.get(pk=run_id)
    seqs = event_seqs(page)
    assert seqs == list(range(1, run.last_seq + 1)), "events missing or repeated after the reconnect"
    assert run.last_seq == RunEvent.objects.filter(run=run).count()
    expect(page.get_by_test_id("tree-node")).to_have_count(run.nodes.count())
    expect(running).to_have_count(0)
    expect(page.get_by_test_id("final-answer")).to_contain_text(run.final_answer.splitlines()[0][:40])

    # Open a node: its prompt, answer and attempts.
    page.locator('[data-testid="tree-node"][data-key="root.item2"]').click()
    panel = page.get_by_test_id("node-panel")
    expect(panel).to_be_visible()
    item2 = run.nodes.get(key="root.item2")
    expect(panel).to_contain_text(item2.text[:40])
    expect(panel).to_contain_text(item2.endpoint.name if item2.endpoint else "")
    screenshot(page, "node-panel")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()

    # The run is listed; the pool's admissibility grid is there, without keys.
    page.goto(f"{live_url}/runs")
    expect(page.get_by_role("link", name=f"#{run.pk}", exact=True)).to_be_visible()
    screenshot(page, "runs")
    page.goto(f"{live_url}/pools")
    expect(page.get_by_test_id("admissibility-grid")).to_be_visible()
    screenshot(page, "pools")


def test_label_a_pair_with_the_keyboard_only(
    page: Page, live_url: str, worker: object, replay_demo: int, admin: User
) -> None:
    from studio.services.tasks import task_create_composite

    task = task_create_composite(owner=admin, items=[("routerbench", item) for item in first_items(2)])
    cheap = wait_for_run(run_create(owner=admin, task_id=task.pk, pool_id=replay_demo, cost_preference=1.0).pk, 60)
    best = wait_for_run(run_create(owner=admin, task_id=task.pk, pool_id=replay_demo, cost_preference=0.0).pk, 60)
    pair = PreferencePair.objects.create(task=task, run_a=cheap, run_b=best, source="human")
    sign_in(page, live_url, admin, then="/label")

    card = page.get_by_test_id("label-pair")
    expect(card).to_have_attribute("data-pair-id", str(pair.pk))
    screenshot(page, "label")
    # Which run is on the right? The page shows sides in random order; B means the right one.
    right_run = int(card.locator("[data-side='right']").get_attribute("data-run-id") or 0)
    page.keyboard.press("b")
    expect(page.get_by_test_id("verdict-B")).to_have_attribute("aria-pressed", "true")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("label-submitted")).to_be_visible()
    label = PreferenceLabel.objects.get(pair=pair, labeler=admin)
    assert label.verdict == ("a" if right_run == cheap.pk else "b")

    page.goto(f"{live_url}/runs/compare?a={cheap.pk}&b={best.pk}")
    expect(page.get_by_text(best.final_answer.splitlines()[0]).first).to_be_visible()
    screenshot(page, "compare")


def test_run_a_task_again_compare_and_pair_it_for_labeling(
    page: Page, live_url: str, worker: object, replay_demo: int, admin: User
) -> None:
    from studio.services.tasks import task_create_composite

    task = task_create_composite(owner=admin, items=[("routerbench", item) for item in first_items(2)])
    first = wait_for_run(run_create(owner=admin, task_id=task.pk, pool_id=replay_demo, cost_preference=1.0).pk, 60)
    sign_in(page, live_url, admin, then=f"/runs/{first.pk}")

    # Run again: the same task, the pool it ran on, another cost preference; no new task.
    page.get_by_test_id("run-again").click()
    expect(page.get_by_role("heading", name=f"Run task #{task.pk} again")).to_be_visible()
    expect(page.get_by_test_id("pool")).to_have_value(str(replay_demo))
    page.get_by_role("radio", name=re.compile("best")).click()
    page.keyboard.press("Control+Enter")
    expect(page).to_have_url(re.compile(r"/runs/\d+$"))
    second = Run.objects.exclude(pk=first.pk).get(task=task)
    assert second.cost_preference == 0.0 and second.pool_id == replay_demo
    expect(page.get_by_test_id("run-status")).to_have_attribute("data-status", "succeeded", timeout=60_000)

    # Pick both on the runs page, compare them, and pair them for the labelers.
    page.goto(f"{live_url}/runs")
    page.get_by_label(f"Pick run {first.pk} to compare").check()
    page.get_by_label(f"Pick run {second.pk} to compare").check()
    page.get_by_role("button", name="Compare").click()
    page.get_by_role("button", name="Pair for labeling").click()
    expect(page.get_by_role("status").filter(has_text="made")).to_be_visible()
    pair = PreferencePair.objects.get(task=task)
    assert {pair.run_a_id, pair.run_b_id} == {first.pk, second.pk}
    page.goto(f"{live_url}/label")
    expect(page.get_by_test_id("label-pair")).to_have_attribute("data-pair-id", str(pair.pk))


def first_items(n: int) -> list[str]:
    from studio.models import RecordedOutcome

    return list(
        RecordedOutcome.objects.filter(source="routerbench")
        .order_by("item_id")
        .values_list("item_id", flat=True)
        .distinct()[:n]
    )


def test_train_then_read_the_evaluation(page: Page, live_url: str, worker: object, admin: User) -> None:
    # A quick reward-model job on real recorded outcomes; its progress streams to 100%.
    sign_in(page, live_url, admin, then="/training")
    page.get_by_label("Kind").select_option("reward_model")
    page.get_by_test_id("start-training").click()
    job = page.get_by_test_id("job-row").first
    expect(job).to_have_attribute("data-status", "succeeded", timeout=150_000)
    progress = job.get_by_test_id("job-progress")
    expect(progress).to_have_attribute("data-progress", "1")
    expect(progress).to_contain_text("100%")
    expect(page.get_by_test_id("checkpoint-row").first).to_be_visible()
    screenshot(page, "training")
    assert_accessible_at_both_sizes(page, "training (a job, its curves, a checkpoint)")

    # A quick policy job guided by that reward model: the form offers it, the lineage names it.
    page.get_by_label("Kind").select_option("policy")
    rm = Checkpoint.objects.get(kind="reward_model")
    page.get_by_test_id("training-guide").select_option(str(rm.pk))
    page.get_by_test_id("start-training").click()
    expect(page.get_by_test_id("job-row")).to_have_count(2)
    guided = page.get_by_test_id("checkpoint-row").filter(has_text=f"guided by reward model {rm.pk}")
    expect(guided).to_be_visible(timeout=150_000)
    policy = Checkpoint.objects.get(kind="policy")
    assert policy.lineage["guide"] == rm.pk and "guide/cells" in policy.metrics

    # A quick evaluation: the learned policy's λ sweep against every baseline, on the outcome
    # file the quick training read (its prompts are embedded now; the default file's 2,300
    # would take the 2 cores about a minute more with a cold cache).
    page.goto(f"{live_url}/evaluation")
    page.get_by_label("Outcomes").select_option("reflexion.jsonl.gz")
    page.get_by_test_id("start-evaluation").click()
    expect(page.get_by_test_id("pareto-plot")).to_be_visible(timeout=240_000)
    series = page.get_by_test_id("pareto-series")
    expect(series.and_(page.locator('[data-method="learned"]'))).to_be_visible()
    methods = set(series.evaluate_all("els => els.map(e => e.dataset.method)"))
    assert {"learned", "random", "cheapest", "best_single", "oracle", "cascade", "knn", "mf"} <= methods
    assert int(series.and_(page.locator('[data-method="learned"]')).get_attribute("data-points") or 0) > 1
    expect(page.get_by_test_id("metrics-table")).to_contain_text("learned")
    expect(page.get_by_test_id("per-domain")).to_be_visible()
    screenshot(page, "evaluation")
    assert_accessible_at_both_sizes(page, "evaluation (plot, metrics, per domain)")


def assert_accessible_at_both_sizes(page: Page, where: str) -> None:
    """axe on the page as it is, at a phone's size and at a laptop's (tests/browser/axe.py)."""
    for width, height in ((390, 844), (1280, 800)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)  # the charts redraw for the new width
        assert_accessible(page, where)
