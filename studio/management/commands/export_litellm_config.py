"""`python manage.py export_litellm_config --pool NAME [--out config.yaml]`"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError

from studio.models import ModelPool
from studio.services.litellm_config import key_env_name, litellm_config_of_pool


class Command(BaseCommand):
    help = (
        "Write a pool as a LiteLLM Proxy config (model_list); keys as os.environ/NAME references, never the keys. "
        "docs/api.md, 'Pools from LiteLLM'."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--pool", required=True, help="the pool's name or id")
        parser.add_argument("--out", type=Path, help="the file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["pool"]
        pool = ModelPool.objects.filter(name=name).first()
        if pool is None and name.isdigit():
            pool = ModelPool.objects.filter(pk=int(name)).first()
        if pool is None:
            raise CommandError(f"There is no pool {name!r}.")
        text = yaml.safe_dump(litellm_config_of_pool(pool), sort_keys=False, allow_unicode=True)
        keyed = sorted({key_env_name(e) for e in pool.endpoints.filter(enabled=True) if e.has_api_key})
        if options["out"] is None:
            self.stdout.write(text, ending="")
        else:
            try:
                options["out"].write_text(text, encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"Cannot write {options['out']}: {exc}") from None
            self.stderr.write(f"Wrote {pool.endpoints.filter(enabled=True).count()} endpoint(s) to {options['out']}.")
        if keyed:
            self.stderr.write(f"The config reads keys from the environment: {', '.join(keyed)}.")
