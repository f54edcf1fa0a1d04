"""`manage.py up --role web|worker|all --queues ...`: the options, the one-line errors, the
migration order between hosts, and a web host and a worker host serving a run over RabbitMQ."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management.base import CommandError, OutputWrapper

from providers.ports import free_port
from studio.up.database import MIGRATION_LOCK, migration_lock
from studio.up.model_server import local_model_plan
from studio.up.plan import loopback, plan_check
from tests.studio.test_up import client
from tests.support.databases import scratch_database
from tests.support.rabbitmq import rabbitmq_url
from tests.support.up import UpProcess

ROOT = Path(__file__).resolve().parents[2]


def options(**given: Any) -> dict[str, Any]:
    return {"role": "all", "queues": None, "host": None, "port": None, "concurrency": None, **given}


def test_all_is_the_default_and_serves_every_queue(monkeypatch) -> None:
    monkeypatch.delenv("ORCHESTRA_HOST", raising=False)
    monkeypatch.delenv("ORCHESTRA_PORT", raising=False)
    plan = plan_check(options(role=None))
    assert (plan.role, plan.host, plan.port, plan.concurrency) == ("all", "127.0.0.1", 8000, 2)
    assert plan.queues == ("orchestrator", "workers", "training")
    assert plan.web and plan.worker and plan.processes == 4
    assert plan.worker_name.startswith("orchestra@")


def test_a_worker_host_serves_the_queues_named(monkeypatch) -> None:
    plan = plan_check(options(role="worker", queues="training, orchestrator", concurrency=3))
    assert plan.queues == ("orchestrator", "training")
    assert not plan.web and plan.worker and plan.processes == 4
    assert plan.worker_name.startswith("orchestra-orchestrator-training@")


def test_a_web_host_binds_where_the_environment_says(monkeypatch) -> None:
    monkeypatch.setenv("ORCHESTRA_HOST", "10.0.0.11")
    monkeypatch.setenv("ORCHESTRA_PORT", "8081")
    plan = plan_check(options(role="web"))
    assert (plan.host, plan.port, plan.web, plan.worker, plan.processes) == ("10.0.0.11", 8081, True, False, 1)


def test_a_model_host_serves_on_its_own_port(monkeypatch) -> None:
    """`--role model`: the local model's server alone, on 8001 unless told otherwise."""
    monkeypatch.delenv("ORCHESTRA_PORT", raising=False)
    monkeypatch.delenv("ORCHESTRA_HOST", raising=False)
    plan = plan_check(options(role="model"))
    assert (plan.role, plan.host, plan.port, plan.web, plan.worker) == ("model", "127.0.0.1", 8001, False, False)
    assert plan_check(options(role="model", port=9100, host="::1")).port == 9100


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"role": "db"}, "--role 'db': choose all, web, worker or model."),
        ({"role": "web", "queues": "workers"}, "--queues: a web host runs no worker"),
        ({"role": "worker", "queues": "workers,gpu"}, "--queues: unknown queue 'gpu'; choose from orchestrator,"),
        ({"role": "worker", "queues": " , "}, "--queues: no queue named"),
        ({"role": "worker", "port": 9000}, "--host/--port: a worker host serves no HTTP"),
        ({"role": "web", "concurrency": 4}, "--concurrency: a web host runs no worker"),
        ({"role": "worker", "concurrency": 0}, "--concurrency 0: a worker needs at least 1 process."),
        ({"role": "model", "queues": "workers"}, "--queues: a model host runs no worker"),
        ({"role": "model", "concurrency": 2}, "--concurrency: a model host runs no worker"),
    ],
)
def test_options_that_make_no_sense_are_refused(given: dict[str, Any], message: str) -> None:
    with pytest.raises(CommandError) as refused:
        plan_check(options(**given))
    assert str(refused.value).startswith(message)


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A `manage.py` command in a process of its own, on the dev settings and this test's services.
    A web server it would start gets a free port (ORCHESTRA_PORT), never `up`'s default 8000,
    which a developer's `make up` beside the tests may hold (tests/conftest.py holds it too)."""
    child_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "studio.settings.dev", "ORCHESTRA_PORT": str(free_port())}
    child_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=120
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused start prints: exit status 1, nothing else on stderr, no traceback."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--role", "cluster"], "CommandError: --role 'cluster': choose all, web, worker or model."),
        (["--role", "worker", "--queues", "workers,gpu"], "CommandError: --queues: unknown queue 'gpu'"),
        (["--role", "web", "--queues", "workers"], "CommandError: --queues: a web host runs no worker"),
    ],
)
def test_bad_options_print_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    line = one_error_line(manage("up", *args, ORCHESTRA_DATA_DIR=str(tmp_path)))
    assert line.startswith(message)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "studio.example"])  # noqa: S104
def test_debug_pages_are_never_served_beyond_loopback(tmp_path: Path, host: str) -> None:
    line = one_error_line(manage("up", "--host", host, ORCHESTRA_DATA_DIR=str(tmp_path), DEBUG="true"))
    assert line.startswith(f"CommandError: --host {host}: DEBUG is on (the default of studio.settings.dev)")
    assert "set DEBUG=false and ALLOWED_HOSTS" in line


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_is_loopback(host: str) -> None:
    assert loopback(host)


def test_a_role_without_the_servers_addresses_says_which_are_missing(tmp_path: Path) -> None:
    line = one_error_line(manage("up", "--role", "worker", ORCHESTRA_DATA_DIR=str(tmp_path), REDIS_URL=""))
    assert line == (
        "CommandError: --role worker needs REDIS_URL in the environment (only --role all starts embedded services)."
    )


def closed_port() -> int:
    return free_port()  # bound, then released: nothing listens there


@pytest.mark.parametrize("role", ["all", "web", "worker"])
def test_an_unreachable_broker_stops_every_role_with_one_line(tmp_path: Path, role: str) -> None:
    url = f"amqp://orchestra:s3cret@127.0.0.1:{closed_port()}//"
    started = time.monotonic()
    line = one_error_line(manage("up", "--role", role, ORCHESTRA_DATA_DIR=str(tmp_path), CELERY_BROKER_URL=url))
    assert time.monotonic() - started < 60  # no retry loop
    assert line.startswith(f"CommandError: CELERY_BROKER_URL=amqp://orchestra:**@127.0.0.1:{url.split(':')[3]}")
    assert "cannot connect to the Celery broker (" in line and "Connection refused" in line
    assert "s3cret" not in line


def test_an_unknown_broker_scheme_is_named(tmp_path: Path) -> None:
    line = one_error_line(
        manage("up", "--role", "worker", ORCHESTRA_DATA_DIR=str(tmp_path), CELERY_BROKER_URL="sqs://q")
    )
    assert line.startswith("CommandError: CELERY_BROKER_URL=sqs://q: unknown broker scheme 'sqs'; use one of redis://")


def test_without_celery_broker_url_the_line_names_redis(tmp_path: Path) -> None:
    redis = f"redis://127.0.0.1:{closed_port()}/0"
    line = one_error_line(manage("up", "--role", "worker", ORCHESTRA_DATA_DIR=str(tmp_path), REDIS_URL=redis))
    assert line.startswith(f"CommandError: CELERY_BROKER_URL is unset, so the broker is REDIS_URL's {redis}: cannot")


@pytest.mark.parametrize("broker", ["amqp://guest:guest@127.0.0.1:{port}//", "bogus://{port}"])
def test_a_celery_worker_started_by_hand_stops_with_one_line(broker: str) -> None:
    url = broker.format(port=closed_port())
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "studio.settings.test", "CELERY_BROKER_URL": url}
    command = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "workers", "--concurrency", "1"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("CELERY_BROKER_URL=")
    assert ("cannot connect to the Celery broker" if broker.startswith("amqp") else "unknown broker scheme") in line


def test_web_hosts_migrate_one_at_a_time() -> None:
    """While one host holds the migration lock, the next waits, then goes on."""
    with scratch_database() as url:
        steps: list[str] = []

        def second_host() -> None:
            with migration_lock(url, lambda: steps.append("waiting")):
                steps.append("migrating")

        with psycopg.connect(url, autocommit=True) as first_host:
            first_host.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
            thread = threading.Thread(target=second_host)
            thread.start()
            deadline = time.monotonic() + 10
            while not steps and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            assert steps == ["waiting"]
            first_host.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            thread.join(timeout=10)
        assert steps == ["waiting", "migrating"]


def test_a_worker_host_does_not_start_on_an_unmigrated_database(tmp_path: Path) -> None:
    with scratch_database() as url:
        result = manage(
            "up", "--role", "worker", "--migrations-wait", "0", ORCHESTRA_DATA_DIR=str(tmp_path), DATABASE_URL=url
        )
    line = one_error_line(result)
    assert re.match(r"CommandError: The database in DATABASE_URL is \d+ migration\(s\) not applied after 0 s;", line)


@pytest.mark.integration
def test_a_web_host_and_a_worker_host_serve_a_run_over_rabbitmq(tmp_path: Path) -> None:
    """Two `up`s, as two hosts would run them: the worker (queues orchestrator and workers)
    starts first and waits for the web host's migrations; then a run submitted to the web
    host goes through RabbitMQ to the worker and finishes."""
    broker = rabbitmq_url()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with scratch_database() as database_url:
        env = {
            "DJANGO_SETTINGS_MODULE": "studio.settings.dev",
            "ORCHESTRA_DATA_DIR": str(tmp_path),  # the shared secrets a deployment sets in its environment
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker,
            "ORCHESTRA_ADMIN_PASSWORD": "roles-test-password",
            "ORCHESTRA_DEMO_POLICY": "false",
        }
        worker = UpProcess(
            ["--role", "worker", "--queues", "orchestrator,workers", "--concurrency", "2"], {**os.environ, **env}
        )
        try:
            worker.wait_for(r"Waiting for a web host to apply the database's migrations")
            web = UpProcess(["--role", "web", "--port", str(port)], {**os.environ, **env})
            try:
                web.wait_for(r"web server is up at", timeout=240)
                name = worker.wait_for(r"worker (orchestra-orchestrator-workers@\S+) is up on queues").group(1)
                health = json.loads(urllib.request.urlopen(f"{base}/api/health").read())
                assert health["status"] == "ok" and name in health["worker"]["workers"]

                api = client(base, "admin", "roles-test-password")
                pools = json.loads(api.open(f"{base}/api/pools?search=replay-demo").read())["items"]
                pool = next(p["id"] for p in pools if p["name"] == "replay-demo")
                items = [{"source": "routerbench", "item_id": f"mbpp.dev.{n}"} for n in (1, 2, 3)]
                body = json.dumps({"items": items}).encode()
                task = json.loads(api.open(urllib.request.Request(f"{base}/api/tasks/composite", body)).read())
                body = json.dumps({"task_id": task["id"], "pool_id": pool}).encode()
                run = json.loads(api.open(urllib.request.Request(f"{base}/api/runs", body)).read())
                deadline = time.monotonic() + 90
                while run["status"] not in {"succeeded", "failed", "cancelled"} and time.monotonic() < deadline:
                    time.sleep(0.5)
                    run = json.loads(api.open(f"{base}/api/runs/{run['id']}").read())
                assert run["status"] == "succeeded", run
                assert not any("Another web host is migrating" in line for line in web.lines)
            finally:
                assert web.stop() == 0
        finally:
            assert worker.stop() == 0
    assert "Stopped; data stays in your servers." in "".join(worker.lines)


def test_up_starts_its_own_model_unless_the_environment_names_one(settings) -> None:
    """A URL adopted from the services file of a killed `up` (studio.settings.dev) is not a server
    the user runs: `up` starts its own. One the environment names is used as it is."""
    stdout = OutputWrapper(io.StringIO())
    settings.ORCHESTRA_LOCAL_MODEL = True
    settings.ORCHESTRA_LOCAL_MODEL_URL, settings.ORCHESTRA_LOCAL_MODEL_URL_GIVEN = "http://127.0.0.1:9/v1", False
    server = local_model_plan(plan_check(options()), stdout)
    assert server is not None and server.url != "http://127.0.0.1:9/v1" and server.name == "smollm2"
    settings.ORCHESTRA_LOCAL_MODEL_URL_GIVEN = True
    assert local_model_plan(plan_check(options()), stdout) is None
    settings.ORCHESTRA_LOCAL_MODEL_URL_GIVEN, settings.ORCHESTRA_LOCAL_MODEL = False, False
    assert local_model_plan(plan_check(options()), stdout) is None
    settings.ORCHESTRA_LOCAL_MODEL = True
    assert local_model_plan(plan_check(options(role="web")), stdout) is None  # a web host starts none
