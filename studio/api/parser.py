"""The API's JSON parser: a body with text PostgreSQL cannot store is refused (studio.storable)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.parser import Parser
from ninja.types import DictStrAny

from studio.storable import check_storable


class StorableJsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> DictStrAny:
        data = super().parse_body(request)
        # An UnstorableText raised here reaches studio.api.errors as the HttpError's cause.
        check_storable(data)
        return data
