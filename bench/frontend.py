"""The browser studio's weight and first paint: the gzip size of the JavaScript and CSS the
live-run page loads, and its first-contentful-paint time in Chromium, cold cache.

    .venv/bin/python bench/frontend.py [--loads 5] [--items 4]

Builds the front end if needed (`make frontend`), starts a real studio (uvicorn + a Celery
worker) on the replay pool, makes one composite run, then opens /runs/<id> in a fresh
browser context `--loads` times: FCP from the Paint Timing API, and the time until the
first tree node is drawn. Sizes are the bytes the page fetched, gzip-compressed at level 9
(what servestatic serves them as).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from playwright.sync_api import Request

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    composite_tasks,
    load_average,
    replay_pool,
    verdict,
    wait_runs,
)
from bench.paths import ROOT  # noqa: E402
from bench.processes import free_port, start_server  # noqa: E402

BUNDLE_GOAL_KB = 400.0
DIST = ROOT / "frontend" / "dist"
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
PASSWORD = "bench-frontend-password"  # noqa: S105 - a throwaway user of the bench database


def gzip_kb(path: Path) -> float:
    return len(gzip.compress(path.read_bytes(), compresslevel=9)) / 1024


def make_run(items: int) -> int:
    from studio.services.runs import run_create

    user = bench_user()
    user.set_password(PASSWORD)
    user.save()
    pool_id = replay_pool()  # imports the recordings first
    (task_id,) = composite_tasks(runs=1, items=items)
    run = run_create(owner=user, task_id=task_id, pool_id=pool_id)
    wait_runs([run.pk], timeout_s=120)
    return run.pk


def measure(base: str, run_id: int, loads: int) -> tuple[list[float], list[float], dict[str, float]]:
    from playwright.sync_api import sync_playwright

    fcps, trees, assets = [], [], {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        login = browser.new_context()
        login.request.get(f"{base}/api/auth/csrf")
        token = next(c["value"] for c in login.cookies() if c["name"] == "csrftoken")
        answer = login.request.post(
            f"{base}/api/auth/login", data={"username": "bench", "password": PASSWORD}, headers={"X-CSRFToken": token}
        )
        if not answer.ok:
            raise SystemExit(f"login failed: {answer.status} {answer.text()}")
        cookies = login.cookies()
        for _ in range(loads):
            context = browser.new_context(viewport={"width": 1280, "height": 800})  # a cold cache each time
            context.add_cookies(cookies)  # type: ignore[arg-type]
            page = context.new_page()
            fetched: list[Request] = []

            def keep(request: Request, into: list[Request] = fetched) -> None:
                into.append(request)

            page.on("requestfinished", keep)
            start = time.perf_counter()
            page.goto(f"{base}/runs/{run_id}")
            page.wait_for_selector('[data-testid="tree-node"]', timeout=30_000)
            trees.append((time.perf_counter() - start) * 1000)
            fcps.append(page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1"))
            for request in fetched:
                path = urlparse(request.url).path
                if path.startswith("/static/") and path.endswith((".js", ".css")):
                    assets[path] = gzip_kb(DIST / path.removeprefix("/static/"))
            context.close()
        browser.close()
    return fcps, trees, assets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=5, help="page loads, each in a fresh context (default 5)")
    parser.add_argument("--items", type=int, default=4, help="items of the composite run shown (default 4)")
    args = parser.parse_args()
    make = shutil.which("make") or "make"
    subprocess.run([make, "--no-print-directory", "frontend"], cwd=ROOT, check=True)
    print(f"Front-end bench at {code_version()}: live-run page, {args.loads} cold loads, Chromium headless")
    every = {p.relative_to(DIST).as_posix(): gzip_kb(p) for p in DIST.rglob("*") if p.suffix in {".js", ".css"}}
    with bench_environment() as bench:
        worker = bench.start_worker("frontend", pool="threads", concurrency=8)
        bench.wait_workers_ready([worker])
        run_id = make_run(args.items)
        port = free_port()
        server = start_server(bench, port)
        try:
            fcps, trees, assets = measure(f"http://127.0.0.1:{port}", run_id, args.loads)
        finally:
            server.terminate()
            server.wait(timeout=10)
    page_kb = sum(assets.values())
    js_kb = sum(kb for path, kb in assets.items() if path.endswith(".js"))
    print(f"  assets the page loaded: {len(assets)} files; JS {js_kb:.1f} KB gzip, JS+CSS {page_kb:.1f} KB gzip")
    for path, kb in sorted(assets.items(), key=lambda item: -item[1]):
        print(f"    {kb:7.1f} KB  {path}")
    print(f"  the whole build: {len(every)} JS/CSS files, {sum(every.values()):.1f} KB gzip")
    print(
        f"  first contentful paint: median {statistics.median(fcps):.0f} ms, max {max(fcps):.0f} ms; "
        f"first tree node drawn: median {statistics.median(trees):.0f} ms ({load_average()})"
    )
    print(f"Goal: live-run JS under {BUNDLE_GOAL_KB:.0f} KB gzip: {verdict(js_kb < BUNDLE_GOAL_KB)}")


if __name__ == "__main__":
    main()
