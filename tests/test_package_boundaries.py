"""The packages' boundaries, read from the source: every import statement, at module level and
inside functions. `workers/` may import `studio/` (its services, selectors and models);
`studio/` sends tasks by name (`studio.queues`), names the one worker function it calls in its
own process the same way (`ORCHESTRA_ATTEMPT_EXECUTOR`, /v1's fast path), and imports nothing
of `workers/`, so the two never import each other. `orchestrator/` imports neither. `workers/`
reads and writes rows only through studio's services and selectors: it never touches a model's
manager (`.objects`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports_of(package: str) -> dict[str, set[str]]:
    """Source file -> the top-level packages it imports (absolute imports; relative ones stay inside)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def importers(package: str, target: str) -> list[str]:
    return [path for path, names in imports_of(package).items() if target in names]


def test_studio_and_workers_do_not_import_each_other() -> None:
    assert importers("workers", "studio"), "the scan found no import of studio in workers: it reads nothing"
    assert importers("studio", "workers") == []


@pytest.mark.parametrize("other", ["studio", "workers", "django"])
def test_orchestrator_imports_neither(other: str) -> None:
    assert importers("orchestrator", other) == []


def managers_used(package: str) -> list[str]:
    """`path:line` of every `<something>.objects` in the package's source."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "objects":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_workers_touch_rows_only_through_studio() -> None:
    assert managers_used("workers") == []


def test_the_scan_sees_a_manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f(Run):\n    return Run.objects.filter(pk=1)\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert managers_used("pkg") == ["pkg/mod.py:2"]


def test_the_scan_sees_imports_inside_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    from workers.tasks import run_step\n    import json\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert importers("pkg", "workers") == ["pkg/mod.py"]


def test_the_worker_function_studio_names_exists() -> None:
    from django.conf import settings
    from django.utils.module_loading import import_string

    from workers.execution import execute_here

    assert import_string(settings.ORCHESTRA_ATTEMPT_EXECUTOR) is execute_here
