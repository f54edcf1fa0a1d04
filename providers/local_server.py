"""The real local model (SmolLM2-135M under llama.cpp's server) for the tests that call it, as
`up` serves it (providers/local_model.py): one server for the whole run, started on first use."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from providers.local_model import Server, check, shipped_file
from providers.ports import free_port

NAME = "smollm2"
CONTEXT = 2048
START_TIMEOUT_S = 60


def server(port: int | None = None, context: int = CONTEXT) -> Server:
    return Server(
        file=shipped_file(), name=NAME, host="127.0.0.1", port=port or free_port(), threads=1, context=context
    )


def wait_ready(spec: Server, process: subprocess.Popen[bytes], timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check(spec.url, spec.name, timeout_s=1.0)["ok"]:
        if process.poll() is not None:
            raise RuntimeError(f"llama.cpp's server exited (code {process.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama.cpp's server did not answer within {timeout_s} s")
        time.sleep(0.1)


def start(spec: Server, log: Path | None = None) -> subprocess.Popen[bytes]:
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - the child holds it
    process = subprocess.Popen(spec.command(), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(spec, process)
    except BaseException:
        stop(process)
        raise
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def serving(port: int | None = None, context: int = CONTEXT) -> Iterator[tuple[Server, subprocess.Popen[bytes]]]:
    """A server of its own, for a test that kills it or needs a small context."""
    spec = server(port, context)
    process = start(spec)
    try:
        yield spec, process
    finally:
        stop(process)
