"""The production settings under the environment docs/deploy.md documents: `manage.py check
--deploy` finds nothing to warn about."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]
ENV_FILE_HEADER = "# /etc/orchestra/orchestra.env"


def documented_environment() -> dict[str, str]:
    """The KEY=VALUE lines of docs/deploy.md's environment file, with its two secrets (the
    `<generate: ...>` placeholders) generated the way it says."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    block = re.search(r"```sh\n(" + re.escape(ENV_FILE_HEADER) + r".*?)```", text, re.DOTALL)
    assert block is not None, f"docs/deploy.md has no block starting with {ENV_FILE_HEADER!r}"
    env = dict(line.split("=", 1) for line in block.group(1).splitlines() if line.strip() and not line.startswith("#"))
    placeholders = sorted(key for key, value in env.items() if value.startswith("<generate:"))
    assert placeholders == ["FIELD_ENCRYPTION_KEY", "SECRET_KEY"]
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    env["FIELD_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
    return env


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Only the documented variables: none of this machine's (DEBUG, DATABASE_URL, ...) leaks in.
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_documented_environment_passes_check_deploy() -> None:
    env = documented_environment()
    assert env["DJANGO_SETTINGS_MODULE"] == "studio.settings.production"
    result = check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.parametrize(
    ("change", "warning"),
    [
        ({"SECURE_SSL_REDIRECT": "false"}, "security.W008"),
        ({"SECURE_HSTS_SECONDS": "0"}, "security.W004"),
        ({"SECURE_COOKIES": "false"}, "security.W012"),
        ({"DEBUG": "true"}, "security.W018"),
    ],
)
def test_turning_a_protection_off_is_reported(change: dict[str, str], warning: str) -> None:
    result = check_deploy({**documented_environment(), **change})
    assert result.returncode != 0
    assert warning in result.stdout + result.stderr


def test_a_missing_secret_stops_the_production_settings() -> None:
    env = documented_environment()
    del env["SECRET_KEY"]
    result = check_deploy(env)
    assert result.returncode != 0
    assert result.stderr.strip() == (
        "ImproperlyConfigured: The environment variable SECRET_KEY is not set. "
        "Production settings take no default for it."
    )
