"""axe-core in the page (the npm package's own file, injected): the accessibility check of
every page in the browser tests. A violation of impact "serious" or "critical" fails; the
lesser ones are reported.

`ORCHESTRA_AXE_REPORT=FILE` appends one JSON line per page checked (where, viewport, the
count of violations by impact, the rules broken) to FILE."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from playwright.sync_api import Page

AXE = Path(settings.BASE_DIR) / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("serious", "critical")


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Every violation axe finds in the page as it is now."""
    if not AXE.is_file():
        raise AssertionError(f"{AXE} is missing: run `make frontend` (npm ci installs axe-core)")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("() => axe.run(document, { resultTypes: ['violations'] })")
    return list(result["violations"])


def _summary(violation: dict[str, Any]) -> str:
    targets = [" ".join(node["target"]) for node in violation["nodes"][:3]]
    return f"{violation['id']} ({violation['impact']}): {violation['help']}; at {', '.join(targets)}"


def assert_accessible(page: Page, where: str) -> None:
    """No serious or critical axe violation in the page; every check goes to the report."""
    violations = axe_violations(page)
    size = page.viewport_size or {"width": 0, "height": 0}
    viewport = f"{size['width']}x{size['height']}"
    counts = {impact: sum(v["impact"] == impact for v in violations) for impact in ("minor", "moderate", *FAILING)}
    line = {"where": where, "viewport": viewport, **counts, "rules": sorted({v["id"] for v in violations})}
    print(f"axe {where} @ {viewport}: {json.dumps(counts)}")
    report = os.environ.get("ORCHESTRA_AXE_REPORT")
    if report:
        with open(report, "a") as out:
            out.write(json.dumps(line) + "\n")
    failing = [_summary(v) for v in violations if v["impact"] in FAILING]
    assert not failing, f"axe on {where} at {viewport}:\n" + "\n".join(failing)
