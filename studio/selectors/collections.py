"""Reading collections: each with its cells counted by status."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from studio.errors import NotFound
from studio.models import CellStatus, Collection, User


def _counted(rows: QuerySet[Collection]) -> QuerySet[Collection]:
    by_status = {f"cells_{s}": Count("cells", filter=Q(cells__status=s)) for s in CellStatus.values}
    return rows.select_related("pool").annotate(cells_total=Count("cells"), **by_status)


def cell_counts(collection: Collection) -> dict[str, int]:
    """How many of its cells are in each status (CellStatus), and `total`."""
    counted = collection_get(collection_id=collection.pk)
    return {status: getattr(counted, f"cells_{status}") for status in [*CellStatus.values, "total"]}


def collection_list(*, owner: User | None = None) -> QuerySet[Collection]:
    rows = Collection.objects.all() if owner is None else Collection.objects.filter(owner=owner)
    return _counted(rows)


def collection_get(*, collection_id: int) -> Collection:
    collection = _counted(Collection.objects.filter(pk=collection_id)).first()
    if collection is None:
        raise NotFound(f"There is no collection {collection_id}.")
    return collection
