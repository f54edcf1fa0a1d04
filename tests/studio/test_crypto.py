from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from studio.crypto import SecretUnreadable, decrypt_secret, encrypt_secret


def test_round_trip_and_ciphertext_differs(settings) -> None:
    token = encrypt_secret("sk-abc")
    assert "sk-abc" not in token
    assert decrypt_secret(token) == "sk-abc"
    assert encrypt_secret("sk-abc") != token  # fresh IV each time


def test_rotation_keeps_old_values_readable(settings) -> None:
    old = settings.FIELD_ENCRYPTION_KEYS[0]
    token = encrypt_secret("sk-old")
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), old]
    assert decrypt_secret(token) == "sk-old"


def test_a_lost_key_is_a_clear_error(settings) -> None:
    token = encrypt_secret("sk-x")
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(SecretUnreadable, match="cannot be decrypted"):
        decrypt_secret(token)


def test_missing_or_malformed_key_is_named(settings) -> None:
    settings.FIELD_ENCRYPTION_KEYS = []
    with pytest.raises(ImproperlyConfigured, match="FIELD_ENCRYPTION_KEY is not set"):
        encrypt_secret("x")
    settings.FIELD_ENCRYPTION_KEYS = ["short"]
    with pytest.raises(ImproperlyConfigured, match="not a Fernet key"):
        encrypt_secret("x")
