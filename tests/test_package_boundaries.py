"""The packages' boundaries, read from the source: every import statement, at module level and
inside functions.

- `orchestrator/` imports neither studio, workers nor Django, and its core
  (`orchestrator/core/`) only itself and the standard library: importing it loads nothing else.
- `providers/` (the calls an attempt makes) imports neither studio, workers, Django, Celery
  nor the tests; studio and workers both import it.
- `workers/` may import `studio/` (its services, selectors and models); `studio/` sends tasks
  by name (`studio.queues`) and imports nothing of `workers/`, so the two never import each
  other. `workers/` reads and writes rows only through studio's services and selectors: it
  never touches a model's manager (`.objects`).
- `bench/` imports nothing of `tests/`: what both use (the scripted OpenAI-compatible server,
  the local model's server) is in `providers/`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def modules_imported(package: str) -> dict[str, set[str]]:
    """Source file -> the modules it imports, dotted (absolute imports; relative ones stay inside)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def imports_of(package: str) -> dict[str, set[str]]:
    """Source file -> the top-level packages it imports."""
    return {path: {name.split(".")[0] for name in names} for path, names in modules_imported(package).items()}


def importers(package: str, target: str) -> list[str]:
    return [path for path, names in imports_of(package).items() if target in names]


def test_studio_and_workers_do_not_import_each_other() -> None:
    assert importers("workers", "studio"), "the scan found no import of studio in workers: it reads nothing"
    assert importers("studio", "workers") == []


@pytest.mark.parametrize("other", ["studio", "workers", "django"])
def test_orchestrator_imports_neither(other: str) -> None:
    assert importers("orchestrator", other) == []


@pytest.mark.parametrize("other", ["studio", "workers", "django", "celery", "tests"])
def test_providers_import_none_of_the_services(other: str) -> None:
    assert importers("providers", other) == []


def test_studio_and_workers_both_import_providers() -> None:
    assert importers("studio", "providers")
    assert importers("workers", "providers")


def test_bench_imports_no_tests() -> None:
    assert len(imports_of("bench")) >= 20, "the scan found too few bench scripts"
    assert importers("bench", "tests") == []


def outside_the_core(names: set[str]) -> set[str]:
    """The imports that are neither the core's own nor the standard library's."""
    return {
        name
        for name in names
        if name != "orchestrator.core"
        and not name.startswith("orchestrator.core.")
        and name.split(".")[0] not in sys.stdlib_module_names | {"__future__"}
    }


def test_the_core_imports_only_the_core() -> None:
    found = modules_imported("orchestrator/core")
    assert len(found) >= 8, f"the scan found {len(found)} modules in the core"
    assert {path: outside_the_core(names) for path, names in found.items() if outside_the_core(names)} == {}


def test_importing_the_core_loads_nothing_else() -> None:
    """What `import orchestrator.core` loads, in a fresh interpreter: the core, the package's
    `__init__`, the standard library; no other module of the project and no third party."""
    code = (
        "import sys; before = set(sys.modules); import orchestrator.core; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    names = set(loaded.stdout.split())
    assert "orchestrator.core.step" in names
    assert outside_the_core(names - {"orchestrator"}) == set()


def test_the_core_check_sees_an_import_from_outside() -> None:
    assert outside_the_core({"orchestrator.core.state", "json", "collections.abc"}) == set()
    assert outside_the_core({"orchestrator.composite.items", "numpy", "orchestrator.core"}) == {
        "orchestrator.composite.items",
        "numpy",
    }


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


def test_the_executor_studio_names_is_its_own() -> None:
    from django.conf import settings
    from django.utils.module_loading import import_string

    from studio.services.calls import execute_here

    assert import_string(settings.ORCHESTRA_ATTEMPT_EXECUTOR) is execute_here
