"""First run: how long a fresh `make up` takes to serve the learned policy.

    .venv/bin/python bench/first_run.py [--port N] [--timeout 600]

`manage.py up` runs as `make up` runs it, on embedded PostgreSQL and Redis (DATABASE_URL and
REDIS_URL are dropped) and a data folder of its own that the bench empties first
(.data/first-run, or BENCH_DATA_DIR): a fresh clone's first start, demo policy included.
From the moment it is started, the bench waits for it to say it is up, makes itself a token,
then sends a recorded RouterBench prompt to `/v1/chat/completions` with the official `openai`
client, model `orchestra` (the studio's default policy), every second, until a run comes back
made by the learned policy.

Printed: seconds to "up", to the first answer, and to the first answer of the learned
policy, with the policy of each run before it. Goal: the learned policy within 60 s.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.processes import free_port  # noqa: E402

DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR", ROOT / ".data" / "first-run")).resolve()
GOAL_S = 60.0


def prompt() -> str:
    """A recorded RouterBench prompt (the replay pool answers it)."""
    with gzip.open(ROOT / "data" / "outcomes" / "routerbench.jsonl.gz", "rt") as lines:
        return str(json.loads(next(lines))["prompt"])


def summary(seen: list[str]) -> str:
    """'default (succeeded, 26.6 s) ... x51, learned (...)': runs of one policy counted once."""
    groups: list[tuple[str, str, int]] = []  # (policy, first run, count)
    for run in seen:
        policy = run.split(" ")[0]
        if groups and groups[-1][0] == policy:
            groups[-1] = (policy, groups[-1][1], groups[-1][2] + 1)
        else:
            groups.append((policy, run, 1))
    return ", ".join(first if n == 1 else f"{first} and {n - 1} more" for _, first, n in groups)


def token(env: dict[str, str]) -> str:
    code = (
        "from studio.models import Role, User; from studio.services.tokens import token_create; "
        "u, _ = User.objects.get_or_create(username='first-run', defaults={'role': Role.ADMIN}); "
        "print(token_create(user=u, name='first-run')[1])"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=None, help="the studio's port (default: a free one)")
    parser.add_argument("--timeout", type=float, default=600, help="give up after this many seconds")
    args = parser.parse_args()
    args.port = args.port or free_port()
    from openai import OpenAI

    shutil.rmtree(DATA_DIR, ignore_errors=True)
    (DATA_DIR / "logs").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"ORCHESTRA_DATA_DIR": str(DATA_DIR), "DJANGO_SETTINGS_MODULE": "studio.settings.dev"}
    env |= {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    log_path = DATA_DIR / "logs" / "up.log"
    load = os.getloadavg()[0]
    print(f"First run: a fresh `manage.py up` on embedded services, {DATA_DIR} (load {load:.2f})", flush=True)
    started = time.monotonic()
    with log_path.open("wb") as log:
        up = subprocess.Popen(
            [sys.executable, "manage.py", "up", "--port", str(args.port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    seen: list[str] = []
    try:
        while b"Orchestra Studio is up" not in log_path.read_bytes():
            if up.poll() is not None or time.monotonic() - started > args.timeout:
                print(log_path.read_text()[-3000:])
                return 1
            time.sleep(0.25)
        up_s = time.monotonic() - started
        client = OpenAI(base_url=f"http://127.0.0.1:{args.port}/v1", api_key=token(env), max_retries=0, timeout=120)
        api = httpx.Client(
            base_url=f"http://127.0.0.1:{args.port}", headers={"Authorization": f"Bearer {client.api_key}"}
        )
        text, first_s, learned_s = prompt(), None, None
        while learned_s is None and time.monotonic() - started < args.timeout:
            raw = client.chat.completions.with_raw_response.create(
                model="orchestra", messages=[{"role": "user", "content": text}]
            )
            run = api.get(f"/api/runs/{raw.headers['x-orchestra-run-id']}").json()
            now = time.monotonic() - started
            first_s = first_s if first_s is not None else now
            seen.append(f"{run['policy']} ({run['status']}, {now:.1f} s)")
            if run["policy"] == "learned" and run["status"] == "succeeded":
                learned_s = now
            else:
                time.sleep(1)
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
    print(f"  up after {up_s:.1f} s; first answer after {first_s:.1f} s" if first_s else f"  up after {up_s:.1f} s")
    print(f"  runs, in order: {summary(seen)}")
    met = learned_s is not None and learned_s <= GOAL_S
    shown = f"{learned_s:.1f} s" if learned_s is not None else f"not within {args.timeout:.0f} s"
    print(f"Goal: the learned policy within {GOAL_S:.0f} s of starting: {shown}: {'MET' if met else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
