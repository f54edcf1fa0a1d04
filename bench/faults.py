"""Provider faults: runs through a real Celery worker against endpoints that fail 30% of calls.

    .venv/bin/python bench/faults.py [--runs 100] [--budget-runs 20] [--rate 0.3] [--seed 1]

The scripted OpenAI-compatible server answers "Question N: double N." with 2N, and a seeded
`--rate` of its requests with a fault instead: a 429 with Retry-After, a 500, a timeout (it
sleeps past the client's timeout), a truncated JSON body, or a slow stream (the body
trickles out, each piece within the client's read timeout, the whole not). The pool has three
endpoints on that server at 1x, 2x and 4x the price, all admissible with `direct`, so the
default policy can retry a pair and fall back to another. The worker gets a provider timeout
of `--timeout` s and one in-call retry (ORCHESTRA_PROVIDER_MAX_RETRIES=1).

- `--runs` single-question runs: each must end succeeded (with the right answer) or failed
  with a stated reason. Attempt n+1 of a node on the same endpoint as attempt n is a
  *retry*, on another endpoint a *fallback*; *call retries* happen inside one attempt.
  Cost overhead = billed cost / (one successful call on the cheapest pair per run).
- `--budget-runs` planned runs (6 subtasks each) with `max_cost_usd` = the plan call plus
  2.5 subtask calls: the overshoot (cost - budget) must stay within the run's largest
  single attempt cost.
Goals: every run ends (no hang), right answers only, no attempt billed for more than one
call, budget overshoot <= 1.0 attempt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    bench_environment,
    bench_user,
    code_version,
    load_average,
    verdict,
    wait_runs,
)
from providers.scripted_openai import FAULT_KINDS, Faults, Reply, ScriptedOpenAI, last_user  # noqa: E402

PRICE = 1000.0  # $/M tokens, in and out, of the cheapest endpoint
ENDPOINTS = (("cheap", 1), ("mid", 2), ("dear", 4))
TOKENS_IN, TOKENS_OUT = 10, 5
SUBTASKS = 6
BUDGET_TAG = re.compile(r"\(budget run (\d+)\)")


def call_cost(factor: float) -> Decimal:
    return Decimal(repr(TOKENS_IN * PRICE * factor / 1e6 + TOKENS_OUT * PRICE * factor / 1e6))


def answer(body: dict[str, Any]) -> Reply:
    """A plan of SUBTASKS questions for a planning call; else the question's number, doubled."""
    question = last_user(body)
    if "You split a task" in (body["messages"][0].get("content") or ""):
        tag = BUDGET_TAG.search(question)
        suffix = f" ({tag.group(0)[1:-1]})" if tag else ""
        subtasks = [{"id": f"q{i}", "text": f"Question {i}: double {i}.{suffix}"} for i in range(1, SUBTASKS + 1)]
        return Reply(content=json.dumps({"subtasks": subtasks}), prompt_tokens=TOKENS_IN, completion_tokens=TOKENS_OUT)
    number = int("".join(ch for ch in question.split(":")[0] if ch.isdigit()) or 0)
    return Reply(content=str(2 * number), prompt_tokens=TOKENS_IN, completion_tokens=TOKENS_OUT)


def make_pool(base_url: str) -> tuple[int, dict[int, str]]:
    from studio.models import Primitive
    from studio.services.pools import admissibility_create, endpoint_create, pool_create

    pool = pool_create(name=f"bench-faults-{os.getpid()}-{time.time_ns()}")
    names = {}
    for name, factor in ENDPOINTS:
        endpoint = endpoint_create(
            pool_id=pool.pk, name=name, model=f"openai/{name}", api_base=base_url, api_key="sk-bench",
            input_cost_per_mtok=PRICE * factor, output_cost_per_mtok=PRICE * factor,
        )  # fmt: skip
        names[endpoint.pk] = name
        for primitive in ("direct", "plan"):
            admissibility_create(
                endpoint_id=endpoint.pk, primitive_id=Primitive.objects.get_or_create(name=primitive)[0].pk
            )
    return pool.pk, names


def start_runs(pool_id: int, texts: list[str], *, decomposable: bool, budget: Decimal | None) -> list[int]:
    from studio.services.runs import run_create
    from studio.services.tasks import task_create

    owner = bench_user()
    ids = []
    for text in texts:
        task = task_create(owner=owner, text=text, decomposable=decomposable, benchmark="bench")
        ids.append(run_create(owner=owner, task_id=task.pk, pool_id=pool_id, max_cost_usd=budget).pk)
    return ids


def route(attempts: list[Any]) -> str:
    """How a node got its answer (or did not): first try, retry, fallback, or failed."""
    if not attempts or attempts[-1].status != "ok":
        return "failed"
    if len(attempts) == 1:
        return "first attempt"
    return "fallback" if attempts[-1].endpoint_id != attempts[0].endpoint_id else "retry"


def report_runs(run_ids: list[int], faults: Faults, names: dict[int, str]) -> dict[str, bool]:
    from studio.models import Attempt, Run

    runs = {run.pk: run for run in Run.objects.filter(pk__in=run_ids).select_related("task")}
    by_node: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in (
        Attempt.objects.filter(node__run_id__in=run_ids).select_related("node").order_by("node_id", "number")
    ):
        by_node[attempt.node_id].append(attempt)
    by_run: dict[int, list[list[Attempt]]] = defaultdict(list)
    for attempts in by_node.values():
        by_run[attempts[0].node.run_id].append(attempts)

    ended = [run for run in runs.values() if run.status in ("succeeded", "failed")]
    succeeded = [run for run in ended if run.status == "succeeded"]
    failed = Counter(run.end_reason.split(";")[0][:90] for run in ended if run.status == "failed")
    wrong = [run.pk for run in succeeded if run.final_answer != str(2 * int(run.task.text.split(":")[0].split()[1]))]
    flat = [a for nodes in by_run.values() for attempts in nodes for a in attempts]
    retries = sum(
        1
        for attempts in by_node.values()
        for prev, a in zip(attempts, attempts[1:], strict=False)
        if a.endpoint_id == prev.endpoint_id
    )
    fallbacks = sum(
        1
        for attempts in by_node.values()
        for prev, a in zip(attempts, attempts[1:], strict=False)
        if a.endpoint_id != prev.endpoint_id
    )
    call_retries = sum(int((a.envelope or {}).get("artifacts", {}).get("retries", 0)) for a in flat)
    factor = dict(ENDPOINTS)
    overbilled = [a.pk for a in flat if a.status == "ok" and a.cost_usd != call_cost(factor[names[a.endpoint_id]])]
    overbilled += [a.pk for a in flat if a.status != "ok" and a.cost_usd != 0]
    unbalanced = [
        run.pk
        for run in runs.values()
        if run.cost_usd != sum((a.cost_usd for n in by_run[run.pk] for a in n), Decimal(0))
    ]
    billed = sum((run.cost_usd for run in runs.values()), Decimal(0))
    ideal = call_cost(1) * len(runs)
    durations = [(run.finished_at - run.created_at).total_seconds() for run in ended if run.finished_at]

    print(
        f"runs: {len(runs)}; ended {len(ended)}; succeeded {len(succeeded)}; failed {len(ended) - len(succeeded)}; "
        f"success rate {len(succeeded) / max(1, len(runs)):.1%}  ({load_average()})"
    )
    for reason, count in failed.most_common():
        print(f"  failed x{count}: {reason}")
    print(
        f"attempts: {len(flat)} for {len(runs)} runs; retries (same pair) {retries}; fallbacks (another pair) "
        f"{fallbacks}; call retries inside attempts {call_retries}\n"
        f"routes: {dict(Counter(route(attempts) for attempts in by_node.values()))}\n"
        f"cost: billed ${billed:.4f}; one successful cheapest call per run ${ideal:.4f}; "
        f"overhead {float(billed / ideal):.3f}x; attempts billed for other than one call: {len(overbilled)}; "
        f"runs whose cost is not the sum of their attempts: {len(unbalanced)}\n"
        f"wrong answers among succeeded runs: {len(wrong)}; run duration max {max(durations, default=0):.1f} s"
    )

    # Per fault kind: what followed each injected fault. A node's requests to one endpoint
    # come in order, attempt by attempt, each attempt making (its call retries + 1) of them.
    run_of_prompt = {run.task.text: run for run in runs.values()}
    by_name = {name: pk for pk, name in names.items()}
    requests: dict[tuple[int, str], list[str]] = defaultdict(list)
    for record in faults.log:
        run = run_of_prompt.get(record.prompt)
        if run is not None:
            requests[(run.pk, record.model.split("/")[-1])].append(record.kind)
    then: dict[str, Counter[str]] = defaultdict(Counter)
    seen_as: dict[str, Counter[str]] = defaultdict(Counter)
    for (run_id, name), kinds in requests.items():
        node_attempts = next(iter(by_run[run_id]), [])
        position = 0
        for index, attempt in enumerate(node_attempts):
            if attempt.endpoint_id != by_name[name] or attempt.envelope is None:
                continue
            calls = int(attempt.envelope.get("artifacts", {}).get("retries", 0)) + 1
            for offset, kind in enumerate(kinds[position : position + calls]):
                if kind == "none":
                    continue
                if offset < calls - 1:
                    then[kind]["call retried"] += 1
                    continue
                seen_as[kind][attempt.error_kind or "ok"] += 1
                following = node_attempts[index + 1] if index + 1 < len(node_attempts) else None
                if following is None:
                    then[kind]["run failed"] += 1
                elif following.endpoint_id == attempt.endpoint_id:
                    then[kind]["attempt retried"] += 1
                else:
                    then[kind]["fell back"] += 1
            position += calls
    injected = Counter(record.kind for record in faults.log if record.prompt in run_of_prompt)
    print(f"requests: {sum(injected.values())}; faulted: {sum(injected.values()) - injected['none']}")
    print(f"  {'fault':<13} {'injected':>8}  {'what followed':<58} recorded as (attempt error_kind)")
    for kind in FAULT_KINDS:
        print(f"  {kind:<13} {injected[kind]:>8}  {dict(then[kind])!s:<58} {dict(seen_as[kind])}")
    return {
        "ended": len(ended) == len(runs),
        "right": not wrong,
        "billed once": not overbilled and not unbalanced,
    }


def report_budget(run_ids: list[int], budget: Decimal) -> float:
    from studio.models import Attempt, Run

    worst = 0.0
    statuses: Counter[str] = Counter()
    for run in Run.objects.filter(pk__in=run_ids):
        costs = [a.cost_usd for a in Attempt.objects.filter(node__run=run)]
        statuses[run.end_reason.split(":")[0] if run.status == "failed" else run.status] += 1
        if costs and max(costs) > 0:
            worst = max(worst, float((run.cost_usd - budget) / max(costs)))
    print(
        f"budget runs: {len(run_ids)} planned runs of {SUBTASKS} subtasks, max_cost_usd ${budget:.4f}; "
        f"ended: {dict(statuses)}\n"
        f"worst overshoot: {worst:.2f} x the run's largest single attempt cost  ({load_average()})"
    )
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="single-question runs")
    parser.add_argument("--budget-runs", type=int, default=20, help="planned runs with a cost budget")
    parser.add_argument("--rate", type=float, default=0.3, help="share of requests that get a fault")
    parser.add_argument("--seed", type=int, default=1, help="fault seed")
    parser.add_argument("--timeout", type=int, default=1, help="provider timeout, seconds (whole)")
    parser.add_argument("--concurrency", type=int, default=8, help="worker threads")
    args = parser.parse_args()

    print(
        f"Faults bench: {args.runs} runs + {args.budget_runs} budget runs; {args.rate:.0%} of requests faulted "
        f"(seed {args.seed}) with {', '.join(FAULT_KINDS)}; provider timeout {args.timeout} s, one call retry; "
        f"3 endpoints at 1x/2x/4x price; a Celery worker (threads, {args.concurrency}).\n"
        f"Start: {load_average()}; {code_version()}",
        flush=True,
    )
    faults = Faults(answer, rate=args.rate, seed=args.seed, client_timeout_s=args.timeout)
    with bench_environment() as bench, ScriptedOpenAI(faults) as server:
        pool_id, names = make_pool(server.base_url)
        worker = bench.start_worker(
            f"bench-faults-{os.getpid()}",
            pool="threads",
            concurrency=args.concurrency,
            env={
                "ORCHESTRA_ATTEMPT_THREADS": str(args.concurrency),
                "ORCHESTRA_PROVIDER_TIMEOUT_S": str(args.timeout),
                "ORCHESTRA_PROVIDER_MAX_RETRIES": "1",
            },
        )
        bench.wait_workers_ready([worker])
        started = time.monotonic()
        texts = [f"Question {i}: double {i}." for i in range(1, args.runs + 1)]
        run_ids = start_runs(pool_id, texts, decomposable=False, budget=None)
        budget = call_cost(1) * Decimal("3.5")
        budget_texts = [f"Double each of 1 to {SUBTASKS} (budget run {i})." for i in range(1, args.budget_runs + 1)]
        budget_ids = start_runs(pool_id, budget_texts, decomposable=True, budget=budget)
        wait_runs(run_ids + budget_ids, timeout_s=300)
        print(f"all runs ended in {time.monotonic() - started:.1f} s", flush=True)
        goals = report_runs(run_ids, faults, names)
        worst = report_budget(budget_ids, budget) if budget_ids else 0.0
        worker.stop()
    print(
        f"End: {load_average()}\n"
        f"Goal: every run ends, succeeded or with a stated reason: {verdict(goals['ended'])}\n"
        f"Goal: no wrong answer: {verdict(goals['right'])}\n"
        f"Goal: no attempt billed for more or less than its one good call: {verdict(goals['billed once'])}\n"
        f"Goal: budget overshoot <= 1.0 x the largest attempt: {verdict(worst <= 1.0)}"
    )


if __name__ == "__main__":
    main()
