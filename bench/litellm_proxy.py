"""LiteLLM Proxy, as the gateway benches run it (bench/gateway.py, bench/local_model.py).

The proxy of the project's litellm version, started on 127.0.0.1 (`litellm --config ...
--num_workers 1`, no database, a random master key) from a virtual environment of its own,
so the project's .venv is never changed: `<bench data>/litellm-proxy-venv`, made on first use
with that litellm and the dependencies its `proxy` extra names, installed by name (the extra
also names litellm-proxy and litellm-enterprise, which the registry here lacks; a pin the
registry lacks is left out and printed), and reused afterwards. Its log:
`<bench data>/logs/litellm-proxy.log`. Its environment carries the gateway bench's upstream
key (bench/gateway_upstream.py), which a config may name as `os.environ/GATEWAY_UPSTREAM_KEY`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

from bench.gateway_upstream import KEY_ENV, UPSTREAM_KEY
from bench.paths import DATA_DIR
from bench.processes import _die_with_parent, free_port, stop

PROXY_VENV = DATA_DIR / "litellm-proxy-venv"
PROXY_LOG = DATA_DIR / "logs" / "litellm-proxy.log"
INSTALLED = PROXY_VENV / "bench-installed.json"
NOT_ON_REGISTRY = {"litellm-proxy", "litellm-enterprise"}  # named by the proxy extra, absent from the registry here


def proxy_requirements() -> list[str]:
    """The `proxy` extra of the project's litellm, each with its version specifier, less the
    packages the registry here lacks."""
    from packaging.requirements import Requirement

    wanted = []
    for line in importlib.metadata.requires("litellm") or []:
        requirement = Requirement(line)
        marker = requirement.marker
        in_extra = marker is not None and marker.evaluate({"extra": "proxy"}) and not marker.evaluate({"extra": ""})
        if in_extra and requirement.name not in NOT_ON_REGISTRY:
            requirement.marker = None
            wanted.append(str(requirement))
    return wanted


def missing_distribution(pip_output: str) -> str | None:
    """The name of the requirement pip found no release of, from its output."""
    from packaging.requirements import InvalidRequirement, Requirement

    found = re.search(r"No matching distribution found for (\S+)", pip_output)
    if found is None:
        return None
    try:
        return Requirement(found.group(1)).name
    except InvalidRequirement:
        return None


def proxy_venv() -> Path:
    """The proxy's virtual environment, made and installed on first use; its `litellm` script."""
    from packaging.requirements import Requirement

    version = importlib.metadata.version("litellm")
    script = PROXY_VENV / "bin" / "litellm"
    if INSTALLED.exists() and json.loads(INSTALLED.read_text()).get("litellm") == version and script.exists():
        print(f"LiteLLM Proxy: reusing {PROXY_VENV} (litellm {version})", flush=True)
        return script
    started = time.monotonic()
    if not (PROXY_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PROXY_VENV)], check=True, capture_output=True)
    wanted, left_out = proxy_requirements(), sorted(NOT_ON_REGISTRY)
    print(f"LiteLLM Proxy: installing into {PROXY_VENV}: litellm=={version} and {', '.join(wanted)}", flush=True)
    log = DATA_DIR / "logs" / "litellm-proxy-install.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    pip = [str(PROXY_VENV / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    while True:
        done = subprocess.run([*pip, f"litellm=={version}", *wanted], capture_output=True, text=True)
        with log.open("a") as out:
            out.write(done.stdout + done.stderr)
        missing = missing_distribution(done.stderr)
        dropped = [line for line in wanted if missing is not None and Requirement(line).name == missing]
        if done.returncode == 0 or not dropped:
            break
        print(f"  no such release on the registry, left out: {', '.join(dropped)}", flush=True)
        wanted = [line for line in wanted if line not in dropped]
        left_out += dropped
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed ({done.returncode}); see {log}")
    INSTALLED.write_text(json.dumps({"litellm": version, "installed": wanted, "left_out": left_out}, indent=1))
    print(f"  installed in {time.monotonic() - started:.0f} s; left out: {', '.join(left_out)}", flush=True)
    return script


class Proxy:
    """The LiteLLM Proxy on 127.0.0.1:`port`, with no database; stopped on exit."""

    def __init__(self, script: Path, config: str, port: int) -> None:
        self.port = port
        self.key = f"sk-bench-{secrets.token_hex(16)}"  # the proxy refuses a known default
        config_path = DATA_DIR / "litellm-proxy.yaml"
        config_path.write_text(config)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(DATA_DIR)),
            "LANG": "C.UTF-8", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": self.key,
            "LITELLM_LOG": "ERROR", "HF_HUB_OFFLINE": "1", KEY_ENV: UPSTREAM_KEY,
        }  # fmt: skip
        command = [str(script), "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port),
                   "--num_workers", "1"]  # fmt: skip
        PROXY_LOG.parent.mkdir(parents=True, exist_ok=True)
        with PROXY_LOG.open("ab") as log:
            self.log_from = log.tell()  # this start's lines
            self.process = subprocess.Popen(
                command, cwd=DATA_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent(),
            )  # fmt: skip

    def wait_ready(self, timeout_s: float = 120.0) -> float:
        """Seconds until /health/liveliness answers; RuntimeError if it exits or times out."""
        import httpx

        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"it exited ({self.process.returncode}): {log_tail(PROXY_LOG, self.log_from)}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{self.port}/health/liveliness", timeout=1).status_code == 200:
                    return time.monotonic() - started
            time.sleep(0.2)
        raise RuntimeError(f"it did not answer within {timeout_s:.0f} s; see {PROXY_LOG}")

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.process, group=True)


def log_tail(path: Path, offset: int) -> str:
    """The last line written to `path` after `offset`."""
    with path.open("rb") as log:
        log.seek(offset)
        lines = [line for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else f"nothing in {path}"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def install_proxy() -> tuple[Path | None, str | None]:
    """The proxy's `litellm` script, installed if need be, or why not (one line)."""
    try:
        return proxy_venv(), None
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        return None, f"installing it failed: {one_line(exc)}"


def start_proxy(script: Path, config: str, stack: contextlib.ExitStack) -> tuple[Proxy | None, str | None]:
    """The proxy, started and answering (stopped when `stack` closes), or why not (one line)."""
    try:
        proxy = stack.enter_context(Proxy(script, config, free_port()))
        ready_s = proxy.wait_ready()
    except (RuntimeError, OSError) as exc:
        return None, f"it did not start: {one_line(exc)}"
    print(f"LiteLLM Proxy: answering on 127.0.0.1:{proxy.port} after {ready_s:.1f} s; log {PROXY_LOG}", flush=True)
    return proxy, None
