"""`manage.py export_event_schema --output FILE`: the WebSocket messages' schemas as an
OpenAPI document (studio/event_schemas.py), for the browser's generated types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from studio.event_schemas import event_schema


class Command(BaseCommand):
    help = "Write the WebSocket messages' schemas (an OpenAPI document) for openapi-typescript."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", required=True, help="where to write the JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["output"])
        path.write_text(json.dumps(event_schema(), indent=1, sort_keys=True) + "\n")
        self.stdout.write(f"wrote {path}")
