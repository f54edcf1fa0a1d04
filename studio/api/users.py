"""The studio's users, by name: what filters by owner offer (researchers and admins)."""

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.pagination import LimitOffsetPagination, paginate

from studio.api.auth import role
from studio.models import Role, User
from studio.selectors.users import user_list

router = Router(tags=["users"], auth=role(Role.RESEARCHER))


class UserOut(Schema):
    id: int
    username: str
    role: str


class UserFilters(Schema):
    role: Role | None = None


@router.get("", response=list[UserOut])
@paginate(LimitOffsetPagination)
def list_users(request: HttpRequest, filters: Query[UserFilters]) -> QuerySet[User]:
    """Every user, by username (a filter by owner; researchers and admins)."""
    return user_list(role=filters.role.value if filters.role else "")
