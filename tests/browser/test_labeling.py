"""The Label page in Chromium: undoing the last verdict from the keyboard, and importing
preference pairs from a JSONL file (a bad file names its bad lines and writes nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from studio.models import PreferenceLabel, PreferencePair, Role, Run, Task, User
from tests.browser.conftest import PASSWORD
from tests.browser.test_studio import sign_in
from tests.factories import TaskFactory
from tests.support.preferences import make_pair

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_undo_the_last_verdict_from_the_keyboard(page: Page, live_url: str) -> None:
    labeler = User.objects.create_user(username="lena", password=PASSWORD, role=Role.LABELER)
    first, second = make_pair(TaskFactory()), make_pair(TaskFactory())
    sign_in(page, live_url, labeler, then="/label")
    card = page.get_by_test_id("label-pair")
    expect(card).to_have_attribute("data-pair-id", str(first.pk))

    page.keyboard.press("a")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-pair-id", str(second.pk))
    expect(page.get_by_test_id("label-submitted")).to_contain_text(f"pair #{first.pk}")
    assert PreferenceLabel.objects.filter(pair=first, labeler=labeler).exists()

    page.keyboard.press("u")  # undo: the verdict is taken back and the pair is shown again
    expect(card).to_have_attribute("data-pair-id", str(first.pk))
    expect(page.get_by_test_id("label-undone")).to_contain_text(f"pair #{first.pk}")
    expect(page.get_by_test_id("label-progress")).to_contain_text("0 of 2 labeled")
    assert not PreferenceLabel.objects.filter(pair=first, labeler=labeler).exists()

    page.keyboard.press("t")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-pair-id", str(second.pk))
    assert PreferenceLabel.objects.get(pair=first, labeler=labeler).verdict == "tie"

    # The Undo button, reached with the keyboard, does the same.
    page.get_by_test_id("label-undo").focus()
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-pair-id", str(first.pk))
    assert not PreferenceLabel.objects.filter(labeler=labeler).exists()


def line(prompt: str, **fields: object) -> str:
    return json.dumps({"prompt": prompt, "chosen": "4", "rejected": "5", "source": "human", **fields})


def counts() -> tuple[int, int, int]:
    return Task.objects.count(), Run.objects.count(), PreferencePair.objects.count()


def test_import_a_jsonl_file_all_or_nothing(page: Page, live_url: str, admin: User, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    no_chosen = json.dumps({"prompt": "4+4?", "rejected": "5", "source": "human"})
    bad.write_text("\n".join([line("2+2?"), "{not json", line("3+3?"), no_chosen]) + "\n")
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join([line("2+2?", benchmark="arith"), "", line("5+5?", source="cheaper_correct")]) + "\n")
    sign_in(page, live_url, admin, then="/label?tab=export")
    before = counts()

    page.get_by_label("JSONL file").set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    errors = page.get_by_test_id("import-errors")
    expect(errors).to_contain_text("Nothing was imported: 2 bad lines in bad.jsonl.")
    expect(errors.locator("li")).to_have_count(2)
    expect(errors.locator("li[data-line='2']")).to_contain_text("Line 2: not valid JSON")
    expect(errors.locator("li[data-line='4']")).to_contain_text('Line 4: "chosen" is missing')
    assert counts() == before, "a refused file wrote rows"

    page.get_by_label("JSONL file").set_input_files(str(good))
    expect(errors).to_have_count(0)  # a new file clears the old errors
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("import-result")).to_have_text(
        "✓ Imported 2 pairs (1 cheaper correct, 1 human): 2 tasks and 4 runs."
    )
    assert counts() == (before[0] + 2, before[1] + 4, before[2] + 2)
    expect(page.get_by_test_id("pair-row")).to_have_count(2)  # the list of pairs shows them
