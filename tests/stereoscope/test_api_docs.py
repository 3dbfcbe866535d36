"""/api/docs/ loads Swagger UI from this server's static files, so it renders without internet."""

import re

import pytest


@pytest.mark.django_db
def test_api_docs_reference_only_local_assets(roles, client_for):
    html = client_for(roles["users"]["coder"]).get("/api/docs/").content.decode()
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    assert any("swagger-ui-bundle.js" in a for a in assets)
    assert all(a.startswith("/") for a in assets), assets
    assert "cdn" not in html.lower()


@pytest.mark.django_db
def test_api_schema_and_docs_need_sign_in(roles, client_for):
    from django.test import Client

    anonymous = Client()
    for url in ["/api/schema/", "/api/schema/?format=json", "/api/docs/"]:
        response = anonymous.get(url)
        assert response.status_code in (401, 403), (url, response.status_code)
        assert b"openapi" not in response.content.lower()
    assert client_for(roles["users"]["coder"]).get("/api/schema/?format=json").json()["openapi"].startswith("3")
