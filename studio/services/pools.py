"""Model pools, endpoints, primitives and admissibility (admin writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from studio.crypto import encrypt_secret
from studio.errors import Conflict, Invalid, NotFound
from studio.models import Admissibility, ModelEndpoint, ModelPool, Primitive
from studio.selectors.pools import calibration_rows

ENDPOINT_FIELDS = {
    "name",
    "model",
    "api_base",
    "input_cost_per_mtok",
    "output_cost_per_mtok",
    "context_window",
    "descriptors",
    "enabled",
}


def check_api_base(api_base: str) -> None:
    if not api_base:
        return
    parts = urlsplit(api_base)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise Invalid("api_base", f"api_base must be an http:// or https:// URL, not {api_base!r}.")


def check_model_string(model: str) -> None:
    if not model.strip() or any(ch.isspace() for ch in model):
        raise Invalid("model", "model must be a litellm model string without spaces, e.g. openai/gpt-4o-mini.")


def _apply(row: Any, changes: dict[str, Any], fields: set[str], nullable: frozenset[str] = frozenset()) -> None:
    """Set the changed `fields` on `row`; null is refused where the column holds no null."""
    for field in sorted(fields & changes.keys()):
        if changes[field] is None and field not in nullable:
            raise Invalid(field, f"{field} may not be null.")
        setattr(row, field, changes[field])


NULLABLE_ENDPOINT_FIELDS = frozenset({"input_cost_per_mtok", "output_cost_per_mtok", "context_window"})


def _get(model: type[Any], pk: int, what: str) -> Any:
    row = model.objects.select_for_update().filter(pk=pk).first()
    if row is None:
        raise NotFound(f"{what} {pk} does not exist.")
    return row


def _save_unique(row: Any, message: str) -> None:
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        raise Conflict(message) from None


def _delete(row: Any, what: str, instead: str) -> None:
    try:
        with transaction.atomic():
            row.delete()
    except ProtectedError:
        raise Conflict(f"{what} is used by existing runs and cannot be deleted; {instead}") from None


@transaction.atomic
def pool_create(*, name: str, description: str = "") -> ModelPool:
    pool = ModelPool(name=name, description=description)
    _save_unique(pool, f"A pool named {name!r} already exists.")
    return pool


def check_calibration_source(pool: ModelPool) -> None:
    """A calibration source must have recorded outcomes for at least one of the pool's models."""
    source = pool.calibration_source
    if source and not calibration_rows(source=source, pool_id=pool.pk).exists():
        raise Invalid(
            "calibration_source",
            f"Source {source!r} has no recorded outcome for a model of pool {pool.name!r}: "
            "import the pool's probe outcomes under that source first (manage.py import_outcomes).",
        )


@transaction.atomic
def pool_update(*, pool_id: int, changes: dict[str, Any]) -> ModelPool:
    pool = _get(ModelPool, pool_id, "Pool")
    _apply(pool, changes, {"name", "description", "calibration_source"})
    if "calibration_source" in changes:
        check_calibration_source(pool)
    _save_unique(pool, f"A pool named {pool.name!r} already exists.")
    return pool


@transaction.atomic
def pool_delete(*, pool_id: int) -> None:
    _delete(
        _get(ModelPool, pool_id, "Pool"), f"Pool {pool_id}",
        "turn its pairs off instead (their admissibility's allowed), and no new run can use it; "
        "its runs keep their history.",
    )  # fmt: skip


def _set_api_key(endpoint: ModelEndpoint, api_key: str | None) -> None:
    if api_key:
        endpoint.api_key_encrypted = encrypt_secret(api_key)


@transaction.atomic
def endpoint_create(
    *, pool_id: int, api_key: str | None = None, primitives: Sequence[str] = (), **fields: Any
) -> ModelEndpoint:
    """An endpoint of the pool, and with `primitives` (names) its admissible pairs, in one step:
    a pool answers runs once it has one."""
    pool = _get(ModelPool, pool_id, "Pool")
    unknown = fields.keys() - ENDPOINT_FIELDS
    if unknown:
        raise Invalid(sorted(unknown)[0], f"Unknown endpoint field {sorted(unknown)[0]!r}.")
    check_model_string(fields["model"])
    check_api_base(fields.get("api_base", ""))
    named = {row.name: row for row in Primitive.objects.filter(name__in=primitives)}
    missing = [name for name in primitives if name not in named]
    if missing:
        known = ", ".join(Primitive.objects.order_by("name").values_list("name", flat=True))
        raise Invalid("primitives", f"No primitive named {missing[0]!r}; the primitives are {known}.")
    endpoint = ModelEndpoint(pool=pool, **fields)
    _set_api_key(endpoint, api_key)
    _save_unique(endpoint, f"Pool {pool.name!r} already has an endpoint named {fields['name']!r}.")
    for name in dict.fromkeys(primitives):  # saved one by one: each save bumps the set-up's generation
        Admissibility.objects.create(endpoint=endpoint, primitive=named[name])
    return endpoint


@transaction.atomic
def endpoint_update(
    *, endpoint_id: int, changes: dict[str, Any], api_key: str | None = None, clear_api_key: bool = False
) -> ModelEndpoint:
    """Apply `changes` (a subset of ENDPOINT_FIELDS); a key is replaced or cleared, never read."""
    endpoint = _get(ModelEndpoint, endpoint_id, "Endpoint")
    _apply(endpoint, changes, ENDPOINT_FIELDS, nullable=NULLABLE_ENDPOINT_FIELDS)
    check_model_string(endpoint.model)
    check_api_base(endpoint.api_base)
    if clear_api_key:
        endpoint.api_key_encrypted = ""
    _set_api_key(endpoint, api_key)
    _save_unique(endpoint, f"This pool already has an endpoint named {endpoint.name!r}.")
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint_id: int) -> None:
    _delete(
        _get(ModelEndpoint, endpoint_id, "Endpoint"), f"Endpoint {endpoint_id}",
        "disable it instead (PATCH its enabled to false), and no new run calls it.",
    )  # fmt: skip


@transaction.atomic
def primitive_create(
    *, name: str, description: str = "", parameters: dict[str, Any] | None = None, needs_tools: bool = False
) -> Primitive:
    primitive = Primitive(name=name, description=description, parameters=parameters or {}, needs_tools=needs_tools)
    _save_unique(primitive, f"A primitive named {name!r} already exists.")
    return primitive


@transaction.atomic
def primitive_update(*, primitive_id: int, changes: dict[str, Any]) -> Primitive:
    primitive = _get(Primitive, primitive_id, "Primitive")
    _apply(primitive, changes, {"name", "description", "parameters", "needs_tools"})
    _save_unique(primitive, f"A primitive named {primitive.name!r} already exists.")
    return primitive


@transaction.atomic
def primitive_delete(*, primitive_id: int) -> None:
    _delete(
        _get(Primitive, primitive_id, "Primitive"), f"Primitive {primitive_id}",
        "turn its pairs off instead (their admissibility's allowed), and no new run uses it.",
    )  # fmt: skip


@transaction.atomic
def admissibility_create(
    *, endpoint_id: int, primitive_id: int, allowed: bool = True, limits: dict[str, Any] | None = None
) -> Admissibility:
    endpoint = _get(ModelEndpoint, endpoint_id, "Endpoint")
    primitive = _get(Primitive, primitive_id, "Primitive")
    row = Admissibility(endpoint=endpoint, primitive=primitive, allowed=allowed, limits=limits or {})
    _save_unique(row, f"Endpoint {endpoint_id} already has an admissibility entry for {primitive.name!r}.")
    return row


@transaction.atomic
def admissibility_update(*, admissibility_id: int, changes: dict[str, Any]) -> Admissibility:
    row = _get(Admissibility, admissibility_id, "Admissibility entry")
    _apply(row, changes, {"allowed", "limits"})
    row.save()
    return row


@transaction.atomic
def admissibility_delete(*, admissibility_id: int) -> None:
    _get(Admissibility, admissibility_id, "Admissibility entry").delete()
