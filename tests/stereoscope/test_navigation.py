"""The main navigation: each role sees the sections its role can open, and building it costs no URL resolution
per page (the minimum role of a section's view is looked up once per URL configuration)."""

from unittest import mock

import pytest

from stereoscope import context_processors


def nav_labels(client, study):
    response = client.get(f"/studies/{study.pk}/")
    assert response.status_code == 200
    return [label for label, _, _ in response.context["nav_items"]]


@pytest.mark.django_db
def test_each_role_sees_the_sections_it_can_open(roles, client_for):
    study, users = roles["a"], roles["users"]
    coder = nav_labels(client_for(users["coder"]), study)
    researcher = nav_labels(client_for(users["researcher"]), study)
    admin = nav_labels(client_for(users["admin"]), study)
    common = ["Studies", "Dashboard", "Toolkits", "Runs", "Coding", "Judging"]
    assert coder == common + ["Questionnaires", "Measures"]
    assert researcher == common + ["Agreement", "Questionnaires", "Measures", "Exports", "Recipe", "Report"]
    assert admin == researcher + ["Members"]


@pytest.mark.django_db
def test_the_navigation_resolves_no_url_once_it_has_been_built(roles, client_for):
    study, client = roles["a"], client_for(roles["users"]["researcher"])
    first = nav_labels(client, study)
    with mock.patch.object(context_processors, "resolve", wraps=context_processors.resolve) as resolve:
        again = nav_labels(client, study)
    assert again == first
    assert resolve.call_count == 0


@pytest.mark.django_db
def test_the_sections_follow_a_changed_url_configuration(roles, rf, settings):
    """The looked-up roles are kept per URL configuration: under one with only the Measures pages, the navigation
    shows Measures and no other section."""
    request = rf.get("/")
    request.study, request.user = roles["a"], roles["users"]["researcher"]
    labels = [label for label, _, _ in context_processors.navigation(request)["nav_items"]]
    assert {"Exports", "Runs", "Measures"} <= set(labels)
    settings.ROOT_URLCONF = "tests.urls_measures_only"
    labels = [label for label, _, _ in context_processors.navigation(request)["nav_items"]]
    assert labels == ["Studies", "Dashboard", "Measures"]
