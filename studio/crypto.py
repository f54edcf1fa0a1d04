"""Encryption at rest for provider API keys.

The keys come from FIELD_ENCRYPTION_KEY (comma-separated Fernet keys: the first
encrypts, every one decrypts, so a key can be rotated without losing stored values).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Shorter "keys" are placeholders (vLLM's "EMPTY"), not secrets worth rewriting text for.
MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"

# Every provider key this process has held in plain text, so that logging can blank them
# (studio.logfilters.RedactSecrets): a provider may echo a key in an error a library logs.
_held: set[str] = set()


def redact_secrets(text: str) -> str:
    """`text` without any provider key this process has encrypted or decrypted."""
    for secret in tuple(_held):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _hold(secret: str) -> str:
    if len(secret) >= MIN_SECRET_CHARS:
        _held.add(secret)
    return secret


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
    return _cipher().encrypt(_hold(plain).encode()).decode()


def decrypt_secret(token: str) -> str:
    try:
        return _hold(_cipher().decrypt(token.encode()).decode())
    except InvalidToken:
        raise SecretUnreadable(
            "A stored provider key cannot be decrypted with the configured "
            "FIELD_ENCRYPTION_KEY; was the key changed without keeping the old one?"
        ) from None
