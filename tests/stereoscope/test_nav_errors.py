"""The sidebar shows only the links a role can use; 403 and 404 pages use the site layout and say why."""

import re

import pytest

SECTIONS = ["Toolkits", "Runs", "Coding", "Judging", "Agreement", "Questionnaires", "Measures", "Exports", "Members"]


def _sidebar(html):
    nav = re.search(r'<nav class="sidebar".*?</nav>', html, re.S).group(0)
    return [label for label in SECTIONS if f">{label}</a>" in nav]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "who, hidden",
    [
        ("coder", {"Agreement", "Exports", "Members"}),
        ("researcher", {"Members"}),
        ("admin", set()),
    ],
)
def test_sidebar_hides_links_the_role_cannot_use(roles, client_for, who, hidden):
    study = roles["a"]
    client = client_for(roles["users"][who])
    html = client.get(f"/studies/{study.pk}/").content.decode()
    shown = _sidebar(html)
    assert set(SECTIONS) - set(shown) == hidden
    for label in shown:  # every link shown opens
        url = re.search(rf'<a href="([^"]+)"[^>]*>{label}</a>', html).group(1)
        assert client.get(url).status_code == 200, label


@pytest.mark.django_db
def test_403_page_uses_layout_and_says_why(roles, client_for):
    response = client_for(roles["users"]["coder"]).get(f"/studies/{roles['a'].pk}/agreement/")
    assert response.status_code == 403
    html = response.content.decode()
    assert '<nav class="sidebar"' in html and "app.css" in html
    assert "needs the researcher role in this study; you are coder" in html


@pytest.mark.django_db
def test_404_page_uses_layout_and_says_why(roles, client_for):
    response = client_for(roles["users"]["coder"]).get(f"/studies/{roles['b'].pk}/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "app.css" in html and "No such study" in html
    missing = client_for(roles["users"]["coder"]).get("/no/such/page/")
    assert missing.status_code == 404 and b"app.css" in missing.content


@pytest.mark.django_db
def test_api_errors_stay_json(roles, api_for):
    api = api_for(roles["users"]["coder"])
    response = api.get("/api/no-such-endpoint/")
    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
    assert "detail" in response.json()
    forbidden = api.get(f"/api/studies/{roles['a'].pk}/members/")
    assert forbidden.status_code == 403 and "detail" in forbidden.json()
