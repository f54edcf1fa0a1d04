"""Model pools, endpoints, primitives and admissibility. Anyone signed in reads; admins write."""

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate
from pydantic import SecretStr

from studio.api.auth import role
from studio.api.body import Body
from studio.models import Admissibility, ModelEndpoint, ModelPool, Primitive, Role
from studio.selectors import pools as selectors
from studio.services import pools as services

router = Router(tags=["pools"], auth=role(Role.VIEWER))
ADMIN = role(Role.ADMIN)

JSONObject = dict[str, Any]


# Pools


class PoolIn(Body):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field("", max_length=10_000)


class PoolPatch(Body):
    name: str | None = Field(None, min_length=1, max_length=100)
    description: str | None = Field(None, max_length=10_000)
    calibration_source: str | None = Field(
        None, max_length=50, description="the recorded-outcome source of the pool's probe outcomes; '' for none"
    )


class PoolOut(Schema):
    id: int
    name: str
    description: str
    calibration_source: str = Field(description="the learned policy calibrates on this source's outcomes")
    created_at: datetime
    updated_at: datetime


@router.get("/pools", response=list[PoolOut])
@paginate(LimitOffsetPagination)
def list_pools(request: HttpRequest, search: str = "") -> QuerySet[ModelPool]:
    return selectors.pool_list(search=search)


@router.post("/pools", auth=ADMIN, response={201: PoolOut})
def create_pool(request: HttpRequest, payload: PoolIn) -> Status:
    return Status(201, services.pool_create(name=payload.name, description=payload.description))


@router.get("/pools/{pool_id}", response=PoolOut)
def get_pool(request: HttpRequest, pool_id: int) -> ModelPool:
    return selectors.pool_get(pool_id=pool_id)


@router.patch("/pools/{pool_id}", auth=ADMIN, response=PoolOut)
def update_pool(request: HttpRequest, pool_id: int, payload: PoolPatch) -> ModelPool:
    return services.pool_update(pool_id=pool_id, changes=payload.dict(exclude_unset=True))


@router.delete("/pools/{pool_id}", auth=ADMIN, response={204: None})
def delete_pool(request: HttpRequest, pool_id: int) -> Status:
    services.pool_delete(pool_id=pool_id)
    return Status(204, None)


# Endpoints


Price = Annotated[Decimal, Field(ge=0, max_digits=12, decimal_places=6)]


class EndpointIn(Body):
    name: str = Field(min_length=1, max_length=100)
    model: str = Field(min_length=1, max_length=200, description="litellm model string")
    api_base: str = Field("", max_length=500, description="e.g. http://127.0.0.1:8001/v1 for vLLM")
    api_key: SecretStr | None = Field(None, description="write-only; stored encrypted")
    input_cost_per_mtok: Price | None = Field(None, description="USD per million input tokens")
    output_cost_per_mtok: Price | None = Field(None, description="USD per million output tokens")
    context_window: int | None = Field(None, ge=1)
    descriptors: JSONObject = Field(default_factory=dict, description="size, family, tags")
    enabled: bool = True
    primitives: list[str] = Field(
        default_factory=list,
        description='primitives to make admissible with it, by name (e.g. ["direct", "cot"]): the pool answers at once',
    )


class EndpointPatch(Body):
    name: str | None = Field(None, min_length=1, max_length=100)
    model: str | None = Field(None, min_length=1, max_length=200)
    api_base: str | None = Field(None, max_length=500)
    api_key: SecretStr | None = Field(None, description="write-only; replaces the stored key")
    clear_api_key: bool = False
    input_cost_per_mtok: Price | None = None
    output_cost_per_mtok: Price | None = None
    context_window: int | None = Field(None, ge=1)
    descriptors: JSONObject | None = None
    enabled: bool | None = None


class EndpointOut(Schema):
    id: int
    pool_id: int
    name: str
    model: str
    api_base: str
    has_api_key: bool = Field(description="whether a key is stored; the key itself is never returned")
    input_cost_per_mtok: float | None
    output_cost_per_mtok: float | None
    context_window: int | None
    descriptors: JSONObject
    enabled: bool
    created_at: datetime
    updated_at: datetime


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


@router.get("/pools/{pool_id}/endpoints", response=list[EndpointOut])
@paginate(LimitOffsetPagination)
def list_endpoints(request: HttpRequest, pool_id: int) -> QuerySet[ModelEndpoint]:
    return selectors.endpoint_list(pool_id=pool_id)


@router.post("/pools/{pool_id}/endpoints", auth=ADMIN, response={201: EndpointOut})
def create_endpoint(request: HttpRequest, pool_id: int, payload: EndpointIn) -> Status:
    fields = payload.dict(exclude={"api_key"})
    return Status(201, services.endpoint_create(pool_id=pool_id, api_key=_secret(payload.api_key), **fields))


@router.get("/endpoints/{endpoint_id}", response=EndpointOut)
def get_endpoint(request: HttpRequest, endpoint_id: int) -> ModelEndpoint:
    return selectors.endpoint_get(endpoint_id=endpoint_id)


@router.patch("/endpoints/{endpoint_id}", auth=ADMIN, response=EndpointOut)
def update_endpoint(request: HttpRequest, endpoint_id: int, payload: EndpointPatch) -> ModelEndpoint:
    changes = payload.dict(exclude_unset=True, exclude={"api_key", "clear_api_key"})
    return services.endpoint_update(
        endpoint_id=endpoint_id,
        changes=changes,
        api_key=_secret(payload.api_key),
        clear_api_key=payload.clear_api_key,
    )


@router.delete("/endpoints/{endpoint_id}", auth=ADMIN, response={204: None})
def delete_endpoint(request: HttpRequest, endpoint_id: int) -> Status:
    services.endpoint_delete(endpoint_id=endpoint_id)
    return Status(204, None)


# Primitives


class PrimitiveIn(Body):
    name: str = Field(min_length=1, max_length=50, pattern=r"^[a-z0-9_-]+$")
    description: str = Field("", max_length=10_000)
    parameters: JSONObject = Field(default_factory=dict, description='e.g. {"k": 5}')
    needs_tools: bool = False


class PrimitivePatch(Body):
    name: str | None = Field(None, min_length=1, max_length=50, pattern=r"^[a-z0-9_-]+$")
    description: str | None = Field(None, max_length=10_000)
    parameters: JSONObject | None = None
    needs_tools: bool | None = None


class PrimitiveOut(Schema):
    id: int
    name: str
    description: str
    parameters: JSONObject
    needs_tools: bool


@router.get("/primitives", response=list[PrimitiveOut])
@paginate(LimitOffsetPagination)
def list_primitives(request: HttpRequest) -> QuerySet[Primitive]:
    return selectors.primitive_list()


@router.post("/primitives", auth=ADMIN, response={201: PrimitiveOut})
def create_primitive(request: HttpRequest, payload: PrimitiveIn) -> Status:
    return Status(201, services.primitive_create(**payload.dict()))


@router.get("/primitives/{primitive_id}", response=PrimitiveOut)
def get_primitive(request: HttpRequest, primitive_id: int) -> Primitive:
    return selectors.primitive_get(primitive_id=primitive_id)


@router.patch("/primitives/{primitive_id}", auth=ADMIN, response=PrimitiveOut)
def update_primitive(request: HttpRequest, primitive_id: int, payload: PrimitivePatch) -> Primitive:
    return services.primitive_update(primitive_id=primitive_id, changes=payload.dict(exclude_unset=True))


@router.delete("/primitives/{primitive_id}", auth=ADMIN, response={204: None})
def delete_primitive(request: HttpRequest, primitive_id: int) -> Status:
    services.primitive_delete(primitive_id=primitive_id)
    return Status(204, None)


# Admissibility


class AdmissibilityIn(Body):
    endpoint_id: int
    primitive_id: int
    allowed: bool = True
    limits: JSONObject = Field(default_factory=dict, description='e.g. {"max_tokens": 1024}')


class AdmissibilityPatch(Body):
    allowed: bool | None = None
    limits: JSONObject | None = None


class AdmissibilityOut(Schema):
    id: int
    endpoint_id: int
    primitive_id: int
    primitive_name: str = Field(alias="primitive.name")
    allowed: bool
    limits: JSONObject


@router.get("/admissibility", response=list[AdmissibilityOut])
@paginate(LimitOffsetPagination)
def list_admissibility(
    request: HttpRequest, pool_id: int | None = None, endpoint_id: int | None = None
) -> QuerySet[Admissibility]:
    return selectors.admissibility_list(pool_id=pool_id, endpoint_id=endpoint_id)


@router.post("/admissibility", auth=ADMIN, response={201: AdmissibilityOut})
def create_admissibility(request: HttpRequest, payload: AdmissibilityIn) -> Status:
    return Status(201, services.admissibility_create(**payload.dict()))


@router.get("/admissibility/{admissibility_id}", response=AdmissibilityOut)
def get_admissibility(request: HttpRequest, admissibility_id: int) -> Admissibility:
    return selectors.admissibility_get(admissibility_id=admissibility_id)


@router.patch("/admissibility/{admissibility_id}", auth=ADMIN, response=AdmissibilityOut)
def update_admissibility(request: HttpRequest, admissibility_id: int, payload: AdmissibilityPatch) -> Admissibility:
    return services.admissibility_update(admissibility_id=admissibility_id, changes=payload.dict(exclude_unset=True))


@router.delete("/admissibility/{admissibility_id}", auth=ADMIN, response={204: None})
def delete_admissibility(request: HttpRequest, admissibility_id: int) -> Status:
    services.admissibility_delete(admissibility_id=admissibility_id)
    return Status(204, None)
