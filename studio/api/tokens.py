from datetime import datetime

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import current_user, role
from studio.api.body import Body
from studio.models import ApiToken, Role
from studio.selectors.users import token_list
from studio.services.tokens import token_create, token_revoke

router = Router(tags=["tokens"], auth=role(Role.VIEWER))


class TokenIn(Body):
    name: str = Field(min_length=1, max_length=100)


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(description="The token itself. It is shown only this once.")


@router.get("", response=list[TokenOut])
@paginate(LimitOffsetPagination)
def list_tokens(request: HttpRequest) -> QuerySet[ApiToken]:
    """Your own API tokens, newest first (the tokens themselves are never shown again)."""
    return token_list(user=current_user(request))


@router.post("", response={201: TokenCreatedOut})
def create_token(request: HttpRequest, payload: TokenIn) -> Status:
    token, raw = token_create(user=current_user(request), name=payload.name)
    return Status(201, {**TokenOut.from_orm(token).dict(), "token": raw})


@router.delete("/{token_id}", response={204: None})
def revoke_token(request: HttpRequest, token_id: int) -> Status:
    """Revoke one of your tokens; it stops working at once."""
    token_revoke(user=current_user(request), token_id=token_id)
    return Status(204, None)
