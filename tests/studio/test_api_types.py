"""The front end's API types are generated from a copy of the schema; the copy must be the
live schema, else the types (and tsc's checks of every API call) describe an older API."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from ninja.responses import NinjaJSONEncoder

from studio.api import api

COPY = Path(settings.BASE_DIR) / "frontend" / "src" / "api" / "openapi.json"


def test_the_front_ends_schema_copy_is_the_live_schema() -> None:
    live = json.loads(json.dumps(api.get_openapi_schema(), cls=NinjaJSONEncoder))
    assert json.loads(COPY.read_text()) == live, "the API changed: run `make api-types` and commit the result"
