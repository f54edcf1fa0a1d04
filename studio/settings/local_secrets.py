"""Secrets for a developer machine: kept in files under DATA_DIR, made on first use.

Only `dev` uses this. Production reads every secret from the environment.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet


def file_secret(path: Path, make: Callable[[], str]) -> str:
    """Return the secret stored at `path`, creating it (mode 0600) if absent."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = make()
    path.touch(mode=0o600)
    path.write_text(value + "\n")
    return value


def secret_key(data_dir: Path) -> str:
    return file_secret(data_dir / "secret_key", lambda: secrets.token_urlsafe(50))


def field_encryption_key(data_dir: Path) -> str:
    return file_secret(data_dir / "field_encryption_key", lambda: Fernet.generate_key().decode())
