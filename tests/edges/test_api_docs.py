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
