from __future__ import annotations

import pytest
from django.test import Client

from studio.crypto import decrypt_secret
from studio.models import ModelEndpoint, Role
from tests.factories import AdmissibilityFactory, EndpointFactory, PoolFactory

pytestmark = pytest.mark.django_db

PLANTED_KEY = "sk-admin-planted-SECRET-42"


@pytest.fixture
def admin_client(make_user) -> Client:
    client = Client()
    client.force_login(make_user(Role.ADMIN, is_staff=True, is_superuser=True))
    return client


def test_admin_sets_a_key_it_never_shows(admin_client: Client) -> None:
    pool = PoolFactory()
    form = {
        "pool": pool.pk,
        "name": "gpt",
        "model": "openai/gpt-4o-mini",
        "api_base": "",
        "descriptors": "{}",
        "enabled": "on",
        "api_key": PLANTED_KEY,
        "admissibilities-TOTAL_FORMS": "0",
        "admissibilities-INITIAL_FORMS": "0",
    }
    response = admin_client.post("/admin/studio/modelendpoint/add/", form)
    assert response.status_code == 302, response.content[:2000]
    endpoint = ModelEndpoint.objects.get(name="gpt")
    assert endpoint.api_key_encrypted != PLANTED_KEY
    assert decrypt_secret(endpoint.api_key_encrypted) == PLANTED_KEY

    change = admin_client.get(f"/admin/studio/modelendpoint/{endpoint.pk}/change/")
    listing = admin_client.get("/admin/studio/modelendpoint/")
    for page in (change, listing):
        assert page.status_code == 200
        assert PLANTED_KEY.encode() not in page.content
        assert endpoint.api_key_encrypted.encode() not in page.content


def test_admin_lists_search_and_filter(admin_client: Client) -> None:
    AdmissibilityFactory(endpoint=EndpointFactory(name="claude-v2"))
    for path in [
        "/admin/studio/modelpool/",
        "/admin/studio/modelendpoint/?q=claude",
        "/admin/studio/primitive/?q=direct",
        "/admin/studio/admissibility/?allowed__exact=1",
        "/admin/studio/user/",
    ]:
        response = admin_client.get(path)
        assert response.status_code == 200, path
    assert b"claude-v2" in admin_client.get("/admin/studio/modelendpoint/?q=claude").content
