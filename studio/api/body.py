"""The base of every request body: a key the body does not have is a 422 naming it.

Without it pydantic drops unknown keys in silence, so a typo (`seeds` for `seed`) ran with
the default and the caller never knew.
"""

from __future__ import annotations

from ninja import Schema
from pydantic import ConfigDict


class Body(Schema):
    model_config = ConfigDict(extra="forbid")
