"""Modules small enough to read (issue 49, item 6): every Python module of the project, its
tests and benches included, at most 400 lines; migrations, which Django writes, aside. The
front end's limit (300 lines for `.ts` and `.tsx`, the generated `.d.ts` aside) is ESLint's
`max-lines` (frontend/eslint.config.js), which `make frontend-lint` runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("orchestrator", "studio", "workers", "providers", "bench", "tests")
LIMIT = 400


def python_modules() -> list[Path]:
    found = sorted(ROOT.glob("*.py"))
    for package in PACKAGES:
        found += sorted(path for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts)
    return found


def test_no_python_module_is_over_400_lines() -> None:
    modules = python_modules()
    assert len(modules) > 300, "the project's modules were not found"
    over = {}
    for path in modules:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            over[str(path.relative_to(ROOT))] = lines
    assert over == {}, f"over {LIMIT} lines: split them"
