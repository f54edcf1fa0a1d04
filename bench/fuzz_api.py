"""A longer schemathesis run of /api/ and /v1/: tests/hardening/test_schemathesis.py with more examples.

    .venv/bin/python bench/fuzz_api.py [--examples 50]

It runs that test under pytest with ORCHESTRA_FUZZ_EXAMPLES examples per operation and
group (`make test` runs 10), on real PostgreSQL and Redis: DATABASE_URL / REDIS_URL, or
embedded ones under .data/bench-fuzz (as `make test` does under .data/test). Examples are
derandomized, so a run with the same count and code repeats. It prints the cases run,
their statuses, the server errors and each problem found (a 5xx, an exception in a view,
a traceback in a body, a 4xx without the documented error shape).

Goal: 0 server errors.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import load_average  # noqa: E402 - after the path is set

TEST = "tests/hardening/test_schemathesis.py"
FIGURES = re.compile(r"^schemathesis: .*$", re.MULTILINE)
SERVER_ERRORS = re.compile(r"server errors: (\d+)")
PROBLEM = re.compile(r"\[(positive|negative|real ids)\]: ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="examples per operation and group (default 50)")
    args = parser.parse_args()
    print(__doc__.split("\n\n")[2])
    print(f"\n{args.examples} examples per operation and group; {load_average()}", flush=True)

    pytest = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", TEST]
    command = [sys.executable, "-m", "studio.embedded", "--data-dir", ".data/bench-fuzz", "--", *pytest]
    env = {**os.environ, "ORCHESTRA_FUZZ_EXAMPLES": str(args.examples)}
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr

    figures = FIGURES.search(output)
    if figures is None:
        print(output[-5000:])
        print(f"\nThe fuzz test printed no figures (exit {result.returncode}).")
        return 1
    print(f"\n{figures.group()}")
    problems = [line for line in output.splitlines() if PROBLEM.search(line)]
    if problems:
        print("\n" + "\n".join(problems[:50]))
    server_errors = SERVER_ERRORS.search(figures.group())
    errors = int(server_errors.group(1)) if server_errors else -1
    print(f"\nwall {time.monotonic() - started:.0f} s; {load_average()}")
    print(f"Goal: 0 server errors {'MET' if errors == 0 and result.returncode == 0 else 'NOT MET'}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
