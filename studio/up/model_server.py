"""The local model server (providers/local_model.py) that `manage.py up` starts: beside the
studio with `--role all`, or alone with `--role model`; checked before it starts."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper

from providers.local_model import LocalModelError, Server, server_check, shipped_file
from studio.up.plan import Plan
from studio.up.probes import free_port, port_free


def local_model_plan(plan: Plan, stdout: OutputWrapper) -> Server | None:
    """The local model server that `up --role all` starts: None where it is off, where
    ORCHESTRA_LOCAL_MODEL_URL names one that runs already, or on a web or worker host."""
    given = settings.ORCHESTRA_LOCAL_MODEL_URL_GIVEN  # not one a killed `up` left in its services file
    if plan.role != "all" or not settings.ORCHESTRA_LOCAL_MODEL or given:
        if settings.ORCHESTRA_LOCAL_MODEL and given:
            stdout.write(f"Local model: {settings.ORCHESTRA_LOCAL_MODEL_URL} (ORCHESTRA_LOCAL_MODEL_URL)")
        return None
    server = model_server(plan, "127.0.0.1", settings.ORCHESTRA_LOCAL_MODEL_PORT or free_port())
    stdout.write(f"Local model: {server.name} ({server.file.name}), {server.url}")
    return server


def model_server(plan: Plan, host: str, port: int) -> Server:
    problem = server_check()
    if problem is not None:
        raise CommandError(problem)
    try:
        file = Path(settings.ORCHESTRA_LOCAL_MODEL_FILE) if settings.ORCHESTRA_LOCAL_MODEL_FILE else shipped_file()
    except LocalModelError as error:
        raise CommandError(str(error)) from None
    if not file.is_file():
        raise CommandError(f"ORCHESTRA_LOCAL_MODEL_FILE={str(file)!r} is not a file.")
    if not port_free(host, port):
        raise CommandError(
            f"Port {port} on {host} is already in use; pick another with ORCHESTRA_LOCAL_MODEL_PORT"
            + (" or --port." if plan.role == "model" else " (0 takes a free one).")
        )
    threads, context = settings.ORCHESTRA_LOCAL_MODEL_THREADS, settings.ORCHESTRA_LOCAL_MODEL_CONTEXT
    if threads < 1 or context < 64:
        raise CommandError(
            f"ORCHESTRA_LOCAL_MODEL_THREADS={threads} / ORCHESTRA_LOCAL_MODEL_CONTEXT={context}: "
            "the server needs at least 1 thread and 64 tokens of context."
        )
    return Server(
        file=file, name=settings.ORCHESTRA_LOCAL_MODEL_NAME, host=host, port=port, threads=threads, context=context
    )
