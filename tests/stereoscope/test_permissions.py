"""The permission matrix. Each case fails if the role check it covers is removed."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db


def study_scoped_urls(study_id, kwarg_names=("study_id", "study_pk")):
    """Every URL in the project that names a study, filled in for `study_id` (other ids set to 1)."""
    found = []

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                if "(?P<format>" in route:  # DRF's format-suffix duplicates
                    continue
                params = re.findall(r"<(?:\w+:)?(\w+)>", route)
                if not any(k in params for k in kwarg_names):
                    continue
                url = route.replace("^", "").replace("$", "")
                for name in params:
                    value = str(study_id if name in kwarg_names else 1)
                    url = re.sub(rf"\(\?P<{name}>[^)]*\)", value, url)
                    url = re.sub(rf"<(?:\w+:)?{name}>", value, url)
                found.append("/" + url)

    walk(get_resolver().url_patterns)
    return sorted(set(found))


def test_url_discovery_finds_pages_and_api():
    urls = study_scoped_urls(7)
    assert "/studies/7/" in urls
    assert "/studies/7/members/" in urls
    assert "/api/studies/7/members/" in urls
    assert len(urls) >= 8


def test_coder_of_a_gets_403_or_404_everywhere_in_b(roles, client_for, api_for):
    coder, study_b = roles["users"]["coder"], roles["b"]
    web, api = client_for(coder), api_for(coder)
    for url in study_scoped_urls(study_b.pk):
        client = api if url.startswith("/api/") else web
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            assert response.status_code in (403, 404, 405), f"{method.upper()} {url} gave {response.status_code}"


def test_api_study_detail_hidden_from_outsider(roles, api_for):
    api = api_for(roles["users"]["coder"])
    assert api.get(f"/api/studies/{roles['b'].pk}/").status_code == 404
    ids = [s["id"] for s in api.get("/api/studies/").json()["results"]]
    assert roles["a"].pk in ids and roles["b"].pk not in ids


def test_coder_cannot_reach_admin_or_researcher_actions(roles, client_for, api_for):
    coder, study = roles["users"]["coder"], roles["a"]
    web, api = client_for(coder), api_for(coder)
    assert web.get(f"/studies/{study.pk}/").status_code == 200  # coders see their study
    assert web.get(f"/studies/{study.pk}/members/").status_code == 403
    assert web.post(f"/studies/{study.pk}/members/", {"username": "outsider", "role": "admin"}).status_code == 403
    assert api.get(f"/api/studies/{study.pk}/members/").status_code == 403
    assert api.post(f"/api/studies/{study.pk}/members/", {"username": "outsider", "role": "admin"}).status_code == 403
    assert api.patch(f"/api/studies/{study.pk}/", {"name": "renamed"}).status_code == 403
    assert not study.memberships.filter(user__username="outsider").exists()


def test_researcher_is_not_study_admin(roles, api_for):
    api = api_for(roles["users"]["researcher"])
    assert (
        api.post(f"/api/studies/{roles['a'].pk}/members/", {"username": "outsider", "role": "coder"}).status_code == 403
    )


def test_study_admin_manages_members(roles, client_for, api_for):
    admin, study = roles["users"]["admin"], roles["a"]
    response = client_for(admin).post(f"/studies/{study.pk}/members/", {"username": "outsider", "role": "coder"})
    assert response.status_code == 302
    assert study.memberships.get(user__username="outsider").role == "coder"
    response = api_for(admin).post(f"/api/studies/{study.pk}/members/", {"username": "nobody", "role": "coder"})
    assert response.status_code == 202 and "if an account by that name exists" in response.json()["detail"]
    assert not study.memberships.filter(user__username="nobody").exists()


def test_staff_sees_every_study(roles, client_for):
    web = client_for(roles["users"]["staff"])
    assert web.get(f"/studies/{roles['b'].pk}/").status_code == 200
    assert web.get(f"/studies/{roles['b'].pk}/members/").status_code == 200


def test_anonymous_is_redirected_to_login(roles, client):
    for url in study_scoped_urls(roles["a"].pk) + ["/", "/studies/"]:
        response = client.get(url)
        if url.startswith("/api/"):
            assert response.status_code in (401, 403), url
        else:
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_last_admin_cannot_be_removed(roles, client_for):
    study = roles["b"]
    membership = study.memberships.get(role="admin")
    response = client_for(roles["users"]["b_admin"]).post(
        f"/studies/{study.pk}/members/{membership.pk}/remove/", follow=True
    )
    assert "at least one admin" in response.content.decode()
    assert study.memberships.filter(role="admin").count() == 1


def test_library_study_is_readable_not_writable(roles, client_for):
    from stereoscope.services import library_study

    lib = library_study()
    web = client_for(roles["users"]["coder"])
    assert web.get(f"/studies/{lib.pk}/").status_code == 200
    assert web.get(f"/studies/{lib.pk}/members/").status_code == 403
