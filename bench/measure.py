"""What the bench scripts measure and print: the machine's load, the commit the bench runs,
percentiles, the MET / NOT MET of a goal, and the CPU seconds that groups of processes (a
process and its children, as `process_tree` finds them) spend between two reads. Nothing
here starts a service or sets Django up; bench/harness.py re-exports every name, so
`from bench.harness import ...` finds them as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def code_version() -> str:
    """The commit the bench runs, and whether tracked files differ from it (read-only git)."""
    git = shutil.which("git")
    try:
        if git is None:
            raise OSError("git not found")
        commit = subprocess.run(
            [git, "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [git, "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "code: unknown (no git)"
    return f"code: {commit}" + (" + uncommitted changes" if changed else "")


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0-100), linear between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=1000, method="inclusive")[max(0, round(q * 10) - 1)]


def verdict(met: bool) -> str:
    return "MET" if met else "NOT MET"


class CpuMeter:
    """CPU seconds spent by groups of processes (and their exited children) between two reads."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.start = self._read()

    @staticmethod
    def _cpu(pids: list[int]) -> dict[int, float]:
        import psutil

        seen: dict[int, float] = {}
        for pid in pids:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = psutil.Process(pid).cpu_times()
                seen[pid] = times.user + times.system + times.children_user + times.children_system
        return seen

    def _read(self) -> dict[str, dict[int, float]]:
        return {name: self._cpu(pids()) for name, pids in self.groups.items()}

    def read(self) -> dict[str, float]:
        """CPU seconds per group since this meter was made."""
        now = self._read()
        return {
            name: sum(cpu - self.start[name].get(pid, 0.0) for pid, cpu in now[name].items()) for name in self.groups
        }


def process_tree(pid: int | None) -> Callable[[], list[int]]:
    def pids() -> list[int]:
        import psutil

        if pid is None:
            return []
        try:
            root = psutil.Process(pid)
            return [pid, *(child.pid for child in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    return pids
