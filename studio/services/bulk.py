"""Writing many rows of one model in one statement.

Django's `bulk_update` builds a `CASE WHEN id = ... THEN ...` expression per field and row,
which costs more CPU than the write itself at the sizes a run step has (tens of rows).
`rows_update` sends `UPDATE ... FROM (VALUES ...)` instead: one statement, with each value
prepared by its model field, as `save()` would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def rows_update(objs: Sequence[models.Model], fields: Sequence[str]) -> int:
    """Write `fields` of each object (matched by primary key) in one UPDATE; returns rows changed."""
    if not objs:
        return 0
    meta = objs[0]._meta
    columns: list[Any] = [meta.get_field(name) for name in fields]
    pk = meta.pk
    assert pk is not None
    casts = [f"%s::{pk.db_type(connection)}", *(f"%s::{field.db_type(connection)}" for field in columns)]
    row = "(" + ", ".join(casts) + ")"
    params: list[Any] = []
    for obj in objs:
        params.append(obj.pk)
        for field in columns:
            params.append(field.get_db_prep_save(getattr(obj, field.attname), connection))
    names = [f'"{field.column}"' for field in columns]
    assignments = ", ".join(f"{name} = v.{name}" for name in names)
    sql = (
        f'UPDATE "{meta.db_table}" AS t SET {assignments} '  # noqa: S608 - names come from the model
        f'FROM (VALUES {", ".join([row] * len(objs))}) AS v("{pk.column}", {", ".join(names)}) '
        f'WHERE t."{pk.column}" = v."{pk.column}"'
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
