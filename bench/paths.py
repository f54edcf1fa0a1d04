"""Where the bench scripts live and where they keep their data: the repository root, and the
folder of the embedded services and the logs (.data/bench, or BENCH_DATA_DIR). Nothing here
starts a service or sets Django up.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# BENCH_DATA_DIR: another folder for the embedded services and logs, so that two benches
# running at once do not share (and flush) one Redis.
DATA_DIR = Path(os.environ.get("BENCH_DATA_DIR") or ROOT / ".data" / "bench").resolve()
