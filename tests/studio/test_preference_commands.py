"""Labels exported and imported by manage.py, as JSON Lines and as a `datasets` directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from studio.models import PreferencePair, Role
from tests.factories import UserFactory
from tests.support.preferences import make_pair

pytestmark = pytest.mark.django_db


def labelled_pairs() -> None:
    labeler = UserFactory(role=Role.LABELER)
    for k in range(3):
        pair = make_pair(model_a="gpt-4", model_b=f"m-{k}")
        pair.labels.create(labeler=labeler, verdict="b" if k else "a")
    make_pair()  # no label: no winner, left out


@pytest.mark.parametrize("fmt", ["jsonl", "datasets"])
def test_labels_round_trip_through_either_format(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    labelled_pairs()
    UserFactory(username="res", role=Role.RESEARCHER)
    out = tmp_path / ("labels.jsonl" if fmt == "jsonl" else "labels")
    call_command("export_preferences", "--out", str(out), "--format", fmt, "--source", "human")
    assert "3 pair(s) written" in capsys.readouterr().out
    before = PreferencePair.objects.count()
    call_command("import_preferences", str(out), "--owner", "res")
    assert "3 pair(s) imported: {'human': 3}" in capsys.readouterr().out
    imported = PreferencePair.objects.filter(metadata__imported=True).order_by("id")
    assert PreferencePair.objects.count() == before + 3
    assert [p.run_a.final_answer for p in imported] == ["42", "41", "41"]  # the chosen answers


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    UserFactory(username="res", role=Role.RESEARCHER)
    with pytest.raises(CommandError, match="No preference pair has a winner yet"):
        call_command("export_preferences", "--out", str(tmp_path / "x.jsonl"))
    with pytest.raises(CommandError, match="must end in .jsonl"):
        call_command("export_preferences", "--out", str(tmp_path / "x.txt"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "chosen": "a"}\n')
    with pytest.raises(CommandError, match='line 1: "rejected" is missing'):
        call_command("import_preferences", str(bad), "--owner", "res")
    with pytest.raises(CommandError, match="is not a saved dataset directory"):
        call_command("import_preferences", str(tmp_path), "--owner", "res")
    with pytest.raises(CommandError, match="There is no user 'nobody'"):
        call_command("import_preferences", str(bad), "--owner", "nobody")
