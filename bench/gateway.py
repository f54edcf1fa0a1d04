"""Gateway overhead: one scripted upstream called directly through litellm, through the real
LiteLLM Proxy, and through Orchestra's /v1, at several concurrencies.

    .venv/bin/python bench/gateway.py [--concurrency 1,16,64] [--requests 200] [--skip-proxy]

The upstream is the scripted OpenAI-compatible server (providers/scripted_openai.py) in a
process of its own on 127.0.0.1: every reply at once, content "42", 10 + 5 tokens. The same
prompts reach it by three routes:

1. direct: `litellm.acompletion(model="openai/scripted", api_base=<upstream>)` in this process,
   no retries;
2. litellm-proxy: the LiteLLM Proxy of the project's litellm version, started here on 127.0.0.1
   (`litellm --config ... --num_workers 1`, no database, a random master key, router retries
   off) from a virtual environment of its own, so the project's .venv is never changed:
   `<bench data>/litellm-proxy-venv`, made on first use with that litellm and the dependencies
   its `proxy` extra names, installed by name (the extra also names litellm-proxy and
   litellm-enterprise, which the registry here lacks; a pin the registry lacks is left out and
   printed), and reused afterwards. Its log: `<bench data>/logs/litellm-proxy.log`;
3. orchestra: `/v1/chat/completions` of the real stack (bench/harness.py: uvicorn, a prefork x 2
   Celery worker, PostgreSQL and Redis), model `orchestra` (the default policy), extra body
   `{"pool": "bench-gateway"}`: a pool made from the same LiteLLM config
   (`pool_from_litellm_config`: one endpoint, primitive `direct` admissible). The default
   policy is the data folder's: a learned checkpoint that another bench made the default
   (synthetic_loop.py's training job does) decides the runs there, and is slower than none;
   the line `Orchestra: ...` says which policy ran.

The proxy and Orchestra are called with the official `openai` async client (max_retries=0).
After a warm-up of each route, at each concurrency every route gets the same `--requests`
prompts (at least 4 x the concurrency), from that many callers at once. The routes take turns,
`--rounds` (10) times, each turn a share of the prompts, so that a few slow seconds of the
machine fall on every route alike. An error is a request that raised or did not answer "42";
latencies are of the others.

Printed, one row per concurrency and route: requests, errors, p50 / p95 / p99 latency, the
overhead over the direct call (p50 and p95 minus the direct call's at that concurrency), and
requests per second.
Goals: at concurrency 1, Orchestra's overhead (p50 and p95) below LiteLLM Proxy's, and both
under 15 ms; at concurrency 64, no errors, and Orchestra's p95 overhead within 2x LiteLLM
Proxy's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    DATA_DIR,
    TERMINAL,
    _die_with_parent,
    bench_environment,
    bench_user,
    code_version,
    forget_pool,
    free_port,
    load_average,
    percentile,
    start_server,
    verdict,
)

POOL = "bench-gateway"
MODEL = "scripted"
KEY_ENV = "GATEWAY_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-upstream-bench"
ANSWER = "42"
PROXY_VENV = DATA_DIR / "litellm-proxy-venv"
PROXY_LOG = DATA_DIR / "logs" / "litellm-proxy.log"
INSTALLED = PROXY_VENV / "bench-installed.json"
NOT_ON_REGISTRY = {"litellm-proxy", "litellm-enterprise"}  # named by the proxy extra, absent from the registry here
WARM_UP = 16
TIMEOUT_S = 120.0
OVERHEAD_GOAL_MS = 15.0


# The upstream, in its own process.


def serve() -> None:
    from providers.scripted_openai import Reply, ScriptedOpenAI

    with ScriptedOpenAI(lambda body: Reply(content=ANSWER, prompt_tokens=10, completion_tokens=5)) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)


class Upstream:
    """The scripted server in a process of its own (its CPU is not this process's, nor its GIL);
    `base_url` once it listens."""

    def __init__(self) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent()
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            stop(self.process, group=False)
            raise RuntimeError("the scripted upstream did not start")

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.process, group=False)


def stop(process: subprocess.Popen[Any], *, group: bool, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after `grace_s` (to its whole process group
    with `group`)."""
    send = (lambda sig: os.killpg(process.pid, sig)) if group else process.send_signal
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            send(signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                send(signal.SIGKILL)
            process.wait()
    if group:  # children that outlived their parent
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def litellm_config(base_url: str) -> str:
    """The LiteLLM config both the proxy and Orchestra's pool are made from."""
    import yaml

    config = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": f"openai/{MODEL}",
                    "api_base": base_url,
                    "api_key": f"os.environ/{KEY_ENV}",
                },
            }
        ],
        "router_settings": {"num_retries": 0},  # as the direct call and the clients: no retries
    }
    return str(yaml.safe_dump(config, sort_keys=False))


# The LiteLLM Proxy, in a virtual environment of its own.


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


# Orchestra's side.


def orchestra_pool(config: str) -> None:
    from studio.services.litellm_config import pool_from_litellm_config

    forget_pool(POOL)
    pool_from_litellm_config(name=POOL, text=config, environ={KEY_ENV: UPSTREAM_KEY}, description="bench/gateway.py")


def settle(bench: Any, timeout_s: float = 60.0) -> None:
    """Wait until Orchestra has nothing left to do (no queued message, no run of the pool going),
    so that its tail does not run into the next route's figures."""
    from studio.models import Run

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        going = Run.objects.filter(pool__name=POOL).exclude(status__in=TERMINAL).exists()
        if not going and bench.queued_messages() == 0:
            return
        time.sleep(0.2)


def orchestra_policies() -> str:
    """Which policy decided Orchestra's runs: model `orchestra` takes the data folder's default
    (a learned checkpoint another bench made the default, or none)."""
    from studio.models import Run

    rows = Run.objects.filter(pool__name=POOL).values_list("policy", "checkpoint__name")
    counts = Counter(policy + (f" (checkpoint {name})" if name else "") for policy, name in rows)
    return ", ".join(f"{count} runs of policy {policy}" for policy, count in counts.most_common())


# The routes and the load.

Ask = Callable[[str], Awaitable[str]]


def direct_route(base_url: str) -> Ask:
    import litellm

    litellm.suppress_debug_info = True

    async def ask(prompt: str) -> str:
        reply = await litellm.acompletion(
            model=f"openai/{MODEL}", api_base=base_url, api_key=UPSTREAM_KEY, num_retries=0, timeout=TIMEOUT_S,
            messages=[{"role": "user", "content": prompt}],
        )  # fmt: skip
        return str(reply.choices[0].message.content)

    return ask


def openai_route(base_url: str, key: str, model: str, extra_body: dict[str, Any] | None = None) -> Ask:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=TIMEOUT_S)

    async def ask(prompt: str) -> str:
        reply = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], extra_body=extra_body
        )
        return str(reply.choices[0].message.content)

    return ask


@dataclass
class Block:
    """One route at one concurrency."""

    route: str
    concurrency: int
    requests: int
    latencies: list[float] = field(default_factory=list)  # seconds, of the requests answered right
    errors: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0

    def ms(self, q: float) -> float:
        return 1000 * percentile(self.latencies, q)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


async def load(ask: Ask, prompts: list[str], concurrency: int, block: Block) -> Block:
    """`prompts` through `ask`, `concurrency` at a time, added to `block`."""
    pending = iter(prompts)

    async def caller() -> None:
        for prompt in pending:  # one iterator shared by the callers: each prompt is sent once
            started = time.perf_counter()
            try:
                answer = await ask(prompt)
            except Exception as exc:  # noqa: BLE001 - an error is a figure of the bench, not its end
                block.errors[type(exc).__name__] += 1
                continue
            if answer.strip() == ANSWER:
                block.latencies.append(time.perf_counter() - started)
            else:
                block.errors["wrong answer"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    block.wall_s += time.perf_counter() - started
    return block


async def measure(
    routes: dict[str, Ask], concurrencies: list[int], requests: int, rounds: int, after: Callable[[str], None]
) -> list[Block]:
    """A warm-up of each route, then at each concurrency the routes take turns, `rounds` times,
    each turn a `rounds`-th of the prompts (at least 2 x the concurrency): a machine that is
    slower for a few seconds slows every route alike. `after(route)` runs (in a thread) after
    each turn."""
    for name, ask in routes.items():
        await load(ask, [f"[warm-up {i}] What is 6 x 7?" for i in range(WARM_UP)], 4, Block(name, 4, WARM_UP))
        await asyncio.to_thread(after, name)
    blocks = []
    for concurrency in concurrencies:
        count = max(requests, 4 * concurrency)
        turns = max(1, min(rounds, count // (2 * concurrency)))
        prompts = [f"[c{concurrency} #{i}] What is 6 x 7?" for i in range(count)]
        shares = [prompts[turn::turns] for turn in range(turns)]
        by_route = {name: Block(name, concurrency, count) for name in routes}
        for share in shares:
            for name, ask in routes.items():
                await load(ask, share, concurrency, by_route[name])
                await asyncio.to_thread(after, name)
        for name, block in by_route.items():
            blocks.append(block)
            print(
                f"  c={concurrency:<3} {name:14} {len(block.latencies)}/{count} ok in {block.wall_s:.1f} s "
                f"({turns} turns; {load_average()})",
                flush=True,
            )
    return blocks


# The report.


def overhead(block: Block, blocks: list[Block], q: float) -> float:
    direct = next(b for b in blocks if b.route == "direct" and b.concurrency == block.concurrency)
    return block.ms(q) - direct.ms(q)


def report(blocks: list[Block]) -> None:
    print(
        f"\n{'conc':>4}  {'route':14} {'requests':>8} {'errors':>6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}"
        f" {'+p50 ms':>9} {'+p95 ms':>9} {'req/s':>8}"
    )
    for block in blocks:
        over = f"{'-':>9} {'-':>9}"
        if block.route != "direct":
            over = f"{overhead(block, blocks, 50):+9.1f} {overhead(block, blocks, 95):+9.1f}"
        print(
            f"{block.concurrency:>4}  {block.route:14} {block.requests:>8} {block.error_count:>6} {block.ms(50):9.1f}"
            f" {block.ms(95):9.1f} {block.ms(99):9.1f} {over} {len(block.latencies) / block.wall_s:8.1f}"
        )
    for block in blocks:
        if block.errors:
            print(f"  errors, c={block.concurrency} {block.route}: {dict(block.errors)}")


def find(blocks: list[Block], route: str, concurrency: int) -> Block | None:
    return next((b for b in blocks if b.route == route and b.concurrency == concurrency), None)


def goals(blocks: list[Block], proxy_problem: str | None) -> bool:
    """Print each goal's MET / NOT MET; whether all are met."""
    met = []
    orchestra, proxy = find(blocks, "orchestra", 1), find(blocks, "litellm-proxy", 1)
    no_proxy = f"LiteLLM Proxy not measured: {proxy_problem}"
    if orchestra is None:
        print("Goal: at concurrency 1 (not measured: --concurrency has no 1): NOT MET")
        met.append(False)
    else:
        o50, o95 = overhead(orchestra, blocks, 50), overhead(orchestra, blocks, 95)
        if proxy is None:
            print(f"Goal: at concurrency 1, Orchestra's overhead below LiteLLM Proxy's ({no_proxy}): NOT MET")
            met.append(False)
        else:
            p50, p95 = overhead(proxy, blocks, 50), overhead(proxy, blocks, 95)
            below = o50 < p50 and o95 < p95
            print(
                f"Goal: at concurrency 1, Orchestra's overhead below LiteLLM Proxy's (p50 {o50:+.1f} vs {p50:+.1f} ms, "
                f"p95 {o95:+.1f} vs {p95:+.1f} ms): {verdict(below)}"
            )
            met.append(below)
        under = o50 < OVERHEAD_GOAL_MS and o95 < OVERHEAD_GOAL_MS
        print(
            f"Goal: at concurrency 1, Orchestra's overhead under {OVERHEAD_GOAL_MS:g} ms at p50 ({o50:+.1f}) and p95 "
            f"({o95:+.1f}): {verdict(under)}"
        )
        met.append(under)
    wide = [b for b in blocks if b.concurrency == 64]
    if not wide:
        print("Goal: at concurrency 64 (not measured: --concurrency has no 64): NOT MET")
        return False
    clean = all(b.error_count == 0 for b in wide)
    counts = ", ".join(f"{b.route} {b.error_count}" for b in wide)
    print(f"Goal: at concurrency 64, no errors ({counts}): {verdict(clean)}")
    met.append(clean)
    orchestra, proxy = find(blocks, "orchestra", 64), find(blocks, "litellm-proxy", 64)
    if orchestra is None or proxy is None:
        print(f"Goal: at concurrency 64, Orchestra's p95 overhead within 2x LiteLLM Proxy's ({no_proxy}): NOT MET")
        met.append(False)
    else:
        o95, p95 = overhead(orchestra, blocks, 95), overhead(proxy, blocks, 95)
        within = o95 <= 2 * p95
        print(
            f"Goal: at concurrency 64, Orchestra's p95 overhead within 2x LiteLLM Proxy's ({o95:+.1f} vs 2 x "
            f"{p95:+.1f} ms): {verdict(within)}"
        )
        met.append(within)
    return all(met)


# The run.


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,16,64", help="callers at once, comma-separated")
    parser.add_argument("--requests", type=int, default=200, help="requests per route and concurrency (>= 4 x it)")
    parser.add_argument("--rounds", type=int, default=10, help="turns the routes take at each concurrency")
    parser.add_argument("--skip-proxy", action="store_true", help="measure the direct call and Orchestra only")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the upstream's own process
    args = parser.parse_args()
    if args.serve:
        serve()
    concurrencies = [int(x) for x in args.concurrency.split(",") if x.strip()]
    if not concurrencies or min(concurrencies) < 1 or args.requests < 1 or args.rounds < 1:
        parser.error("--concurrency takes positive integers, and --requests and --rounds positive counts")
    print(
        f"Gateway bench: a 0-latency scripted upstream directly through litellm, through LiteLLM Proxy and through "
        f"Orchestra's /v1, at concurrency {', '.join(map(str, concurrencies))}, {args.requests} requests each "
        f"(at least 4 x the concurrency).\nStart: {load_average()}; {code_version()}",
        flush=True,
    )
    started = time.monotonic()
    script, proxy_problem = install_proxy() if not args.skip_proxy else (None, "--skip-proxy")
    with bench_environment() as bench, Upstream() as upstream, contextlib.ExitStack() as stack:
        from studio.services.tokens import token_create

        config = litellm_config(upstream.base_url)
        print(f"upstream: {upstream.base_url}", flush=True)
        proxy = None
        if script is not None:
            proxy, proxy_problem = start_proxy(script, config, stack)
        if proxy is None:
            print(f"LiteLLM Proxy: not measured: {proxy_problem}", flush=True)
        orchestra_pool(config)
        worker = bench.start_worker("gateway", pool="prefork", concurrency=2)
        bench.wait_workers_ready([worker])
        port = free_port()
        server = start_server(bench, port)
        stack.callback(stop, server, group=False, grace_s=15)
        token = token_create(user=bench_user(), name=f"gateway-{time.time_ns()}")[1]
        routes = {"direct": direct_route(upstream.base_url)}
        if proxy is not None:
            routes["litellm-proxy"] = openai_route(f"http://127.0.0.1:{proxy.port}/v1", proxy.key, MODEL)
        routes["orchestra"] = openai_route(f"http://127.0.0.1:{port}/v1", token, "orchestra", {"pool": POOL})
        print(f"stack up in {time.monotonic() - started:.0f} s; measuring ({load_average()})", flush=True)

        def after(route: str) -> None:
            if route == "orchestra":
                settle(bench)

        blocks = asyncio.run(measure(routes, concurrencies, args.requests, args.rounds, after))
        print(f"Orchestra: {orchestra_policies()}", flush=True)
    report(blocks)
    met = goals(blocks, proxy_problem)
    print(f"\nIn all {time.monotonic() - started:.0f} s. End: {load_average()}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
