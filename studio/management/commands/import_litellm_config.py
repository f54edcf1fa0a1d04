"""`python manage.py import_litellm_config CONFIG.yaml --pool NAME [--primitives direct,cot]`"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from studio.errors import ApplicationError
from studio.services.litellm_config import pool_from_litellm_config


class Command(BaseCommand):
    help = (
        "Make a pool from a LiteLLM Proxy config's model_list: an endpoint per entry (its model, api_base and "
        "prices), keys read from os.environ/NAME references and stored encrypted. docs/api.md, 'Pools from LiteLLM'."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path, help="a LiteLLM Proxy config (YAML), e.g. config.yaml")
        parser.add_argument("--pool", required=True, help="the new pool's name")
        parser.add_argument(
            "--primitives", default="direct",
            help="admissible primitives of an entry whose model_info.orchestra names none (default: direct)",
        )  # fmt: skip
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from None
        primitives = [name.strip() for name in options["primitives"].split(",") if name.strip()]
        try:
            made = pool_from_litellm_config(
                name=options["pool"], text=text, environ=os.environ, default_primitives=primitives,
                description=options["description"],
            )  # fmt: skip
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        for warning in made.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"Pool {made.pool.name!r} (id {made.pool.pk}) made with {len(made.endpoints)} endpoint(s):")
        for entry in made.endpoints:
            key = f"key from {entry.api_key_env}" if entry.api_key_env else ("key" if entry.api_key else "no key")
            prices = f"${entry.input_cost_per_mtok} / ${entry.output_cost_per_mtok} per Mtok"
            self.stdout.write(f"  {entry.name}: {entry.model}, {prices}, {key}; {', '.join(entry.primitives)}")
