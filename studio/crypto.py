"""Encryption at rest for provider API keys.

The keys come from FIELD_ENCRYPTION_KEY (comma-separated Fernet keys: the first
encrypts, every one decrypts, so a key can be rotated without losing stored values).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted with any configured key."""


def _cipher() -> MultiFernet:
    keys = settings.FIELD_ENCRYPTION_KEYS
    if not keys:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEY is not set; provider keys cannot be encrypted. "
            'Generate one with: python -c "from cryptography.fernet import Fernet; '
            'print(Fernet.generate_key().decode())"'
        )
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except ValueError:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEY holds a value that is not a Fernet key (32 url-safe base64-encoded bytes)."
        ) from None


def encrypt_secret(plain: str) -> str:
    return _cipher().encrypt(plain.encode()).decode()


def decrypt_secret(token: str) -> str:
    try:
        return _cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "A stored provider key cannot be decrypted with the configured "
            "FIELD_ENCRYPTION_KEY; was the key changed without keeping the old one?"
        ) from None
