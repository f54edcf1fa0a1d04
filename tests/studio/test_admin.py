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


def test_admin_endpoint_writes_keep_the_services_rules(admin_client: Client) -> None:
    pool = PoolFactory()
    form = {
        "pool": pool.pk,
        "name": "odd",
        "model": "openai/gpt 4o",
        "api_base": "ftp://example.com/v1",
        "descriptors": "{}",
        "admissibilities-TOTAL_FORMS": "0",
        "admissibilities-INITIAL_FORMS": "0",
    }
    response = admin_client.post("/admin/studio/modelendpoint/add/", form)
    assert response.status_code == 200  # the form again, with the services' sentences
    assert b"model must be a litellm model string without spaces" in response.content
    assert b"api_base must be an http:// or https:// URL" in response.content
    assert not ModelEndpoint.objects.exists()

    endpoint = EndpointFactory(pool=pool, name="kept", model="openai/gpt-4o-mini")
    change = {**form, "name": "kept", "model": "openai/gpt-4o", "api_base": "https://llm.example.com/v1"}
    response = admin_client.post(f"/admin/studio/modelendpoint/{endpoint.pk}/change/", change)
    assert response.status_code == 302, response.content[:2000]
    endpoint.refresh_from_db()
    assert (endpoint.model, endpoint.api_base) == ("openai/gpt-4o", "https://llm.example.com/v1")

    # A pool's page lists its endpoints read only: what it posts for them changes nothing.
    page = admin_client.get(f"/admin/studio/modelpool/{pool.pk}/change/")
    assert page.status_code == 200 and b"kept" in page.content
    admin_client.post(
        f"/admin/studio/modelpool/{pool.pk}/change/",
        {
            "name": pool.name, "description": "",
            "endpoints-TOTAL_FORMS": "2", "endpoints-INITIAL_FORMS": "1",
            "endpoints-0-id": endpoint.pk, "endpoints-0-pool": pool.pk, "endpoints-0-model": "bad model",
            "endpoints-1-pool": pool.pk, "endpoints-1-name": "sneaked", "endpoints-1-model": "openai/x",
        },
    )  # fmt: skip
    endpoint.refresh_from_db()
    assert endpoint.model == "openai/gpt-4o"
    assert not ModelEndpoint.objects.filter(name="sneaked").exists()
