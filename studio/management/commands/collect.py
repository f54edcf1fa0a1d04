"""`python manage.py collect --pool NAME --tasks IDS|--benchmark B --pairs ENDPOINT/PRIMITIVE,... --budget USD`,
`collect --resume ID [--budget USD]` and `collect --follow ID`: queue a collection on the workers
(queue `training`) and follow it with a progress bar until it ends."""

from __future__ import annotations

import random
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from tqdm import tqdm

from studio import queues
from studio.errors import ApplicationError
from studio.models import JOB_ACTIVE, Admissibility, ModelPool, Task, User
from studio.selectors.collections import cell_counts, collection_get
from studio.services.collections import cells_progress, collection_create, collection_resume

FOLLOW_EVERY_S = 0.5


def parse_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--tasks takes task ids separated by commas, not {text!r}") from None


def pool_named(name: str) -> ModelPool:
    pool = ModelPool.objects.filter(Q(name=name) | Q(pk=int(name) if name.isdigit() else None)).first()
    if pool is None:
        known = ", ".join(ModelPool.objects.values_list("name", flat=True)[:20]) or "none yet"
        raise CommandError(f"There is no pool {name!r}. Pools: {known}.")
    return pool


def pairs_named(pool: ModelPool, text: str) -> list[tuple[int, str]]:
    """'m1/direct,m2/cot' (endpoint names or models); 'all': every admissible pair of the pool."""
    rows = Admissibility.objects.filter(endpoint__pool=pool, allowed=True, endpoint__enabled=True).select_related(
        "endpoint", "primitive"
    )
    known = {(row.endpoint.name, row.primitive.name): row.endpoint_id for row in rows}
    known |= {(row.endpoint.model, row.primitive.name): row.endpoint_id for row in rows}
    if text.strip() == "all":
        return sorted({(endpoint, primitive) for (_, primitive), endpoint in known.items()})
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, primitive = part.rpartition("/")
        if (name, primitive) not in known:
            listed = ", ".join(sorted({f"{n}/{p}" for (n, p) in known if "/" not in n})) or "none"
            raise CommandError(f"{part!r} is not an admissible pair of pool {pool.name!r}. Pairs: {listed}.")
        out.append((known[name, primitive], primitive))
    return out


class Command(BaseCommand):
    help = (
        "Run chosen tasks × chosen (endpoint, primitive) pairs of a pool through the provider, within a dollar "
        "budget, and keep each result as a recorded outcome whose source is the collection's (collection-<id>). "
        "A worker on queue `training` runs it (make up starts one); this follows it with a progress bar. "
        "Resumable: --resume ID calls only the cells not yet recorded. docs/collect.md."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--pool", help="the pool (name or id)")
        parser.add_argument("--tasks", help="task ids, comma-separated")
        parser.add_argument("--benchmark", help="every task of this benchmark (with --owner: that user's)")
        parser.add_argument("--pairs", default="all", help="ENDPOINT/PRIMITIVE,... (endpoint name or model), or all")
        parser.add_argument("--budget", type=float, help="dollars the collection may spend")
        parser.add_argument("--concurrency", type=int, default=4, help="calls in flight per endpoint (default 4)")
        parser.add_argument("--name", default="", help="a name for the collection")
        parser.add_argument("--k", type=int, help="a seeded sample of K of the chosen tasks (probe items)")
        parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
        parser.add_argument(
            "--calibrate", action="store_true",
            help="once it succeeds, its outcomes become the pool's calibration (the live learned policy's probes)",
        )  # fmt: skip
        parser.add_argument("--owner", help="the user it belongs to (default: the first admin)")
        parser.add_argument("--resume", type=int, help="resume collection ID (cells recorded are not called again)")
        parser.add_argument("--follow", type=int, help="follow collection ID's progress until it ends")
        parser.add_argument("--no-wait", action="store_true", help="queue it and return, without following it")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["follow"] is not None:
                collection = collection_get(collection_id=options["follow"])
            elif options["resume"] is not None:  # queued again once committed
                collection = collection_resume(collection_id=options["resume"], budget_usd=options["budget"])
            else:
                collection = self.create(options)
                if not queues.send(queues.COLLECT, collection.pk):
                    raise CommandError(
                        f"Collection {collection.pk} is made but the broker is unreachable; once it is up, "
                        f"`collect --resume {collection.pk}` sends it."
                    )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"collection {collection.pk} ({collection.source}): {collection.cells.count()} cells")
        if options["no_wait"]:
            self.stdout.write(f"queued on queue `training`; follow it with `collect --follow {collection.pk}`")
            return
        self.follow(collection.pk, bar=not options["no_progress"])

    def follow(self, collection_id: int, *, bar: bool) -> None:
        """A progress bar of the collection as the workers run it, until it ends."""
        total, done, _ = cells_progress(collection_id=collection_id)
        progress = tqdm(total=total, initial=done, unit="cell", disable=not bar)
        try:
            while True:
                collection = collection_get(collection_id=collection_id)
                _, done, _ = cells_progress(collection_id=collection_id)
                progress.n = done
                progress.set_postfix_str(f"${collection.spent_usd:.4f} of ${collection.budget_usd:g}", refresh=True)
                if collection.status not in JOB_ACTIVE:
                    break
                time.sleep(FOLLOW_EVERY_S)
        except KeyboardInterrupt:
            progress.close()
            self.stdout.write(f"\nstill running on the workers; `collect --follow {collection_id}` follows it again")
            return
        progress.close()
        counts = cell_counts(collection)
        self.stdout.write(
            f"{collection.status}: {counts['recorded']} recorded, {counts['failed']} failed, {counts['pending']} "
            f"pending; spent ${collection.spent_usd:.6f} of ${collection.budget_usd:f}. {collection.message}"
        )

    def create(self, options: dict[str, Any]) -> Any:
        if not options["pool"]:
            raise CommandError("--pool is required (or --resume ID)")
        if options["budget"] is None:
            raise CommandError("--budget is required: the dollars the collection may spend")
        if bool(options["tasks"]) == bool(options["benchmark"]):
            raise CommandError("give one of --tasks IDS or --benchmark NAME")
        owner = self.owner(options["owner"])
        pool = pool_named(options["pool"])
        if options["tasks"]:
            task_ids = parse_ids(options["tasks"])
        else:
            rows = Task.objects.filter(benchmark=options["benchmark"])
            if options["owner"]:
                rows = rows.filter(owner=owner)
            task_ids = list(rows.order_by("id").values_list("id", flat=True))
            if not task_ids:
                raise CommandError(
                    f"No task of benchmark {options['benchmark']!r}; make some with tasks_from_benchmark"
                )
        if options["k"] is not None:
            if not 1 <= options["k"] <= len(task_ids):
                raise CommandError(f"--k must be within 1 and the {len(task_ids)} task(s) chosen")
            sample = random.Random(options["seed"]).sample(sorted(task_ids), options["k"])  # noqa: S311 (not secret)
            task_ids = sorted(sample)
        return collection_create(
            owner=owner, pool_id=pool.pk, task_ids=task_ids, pairs=pairs_named(pool, options["pairs"]),
            budget_usd=options["budget"], max_concurrency=options["concurrency"], name=options["name"],
            calibrates=options["calibrate"], enqueue=False,  # sent by handle, which says if the broker is away
        )  # fmt: skip

    def owner(self, name: str | None) -> User:
        if name:
            user = User.objects.filter(username=name).first()
            if user is None:
                raise CommandError(f"There is no user {name!r}.")
            return user
        user = User.objects.filter(is_superuser=True).order_by("id").first() or User.objects.order_by("id").first()
        if user is None:
            raise CommandError("There is no user yet; create one (make up does) or give --owner.")
        return user
