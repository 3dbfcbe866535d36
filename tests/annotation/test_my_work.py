"""Coder onboarding: a coder signs in to "My work" (their queues across studies, with progress), a coder's study
dashboard shows their queue instead of row counts, and the one-time invitation link has a copy button."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment
from stereoscope import trash
from stereoscope.models import Membership, Study
from tests.conftest import PASSWORD


@pytest.fixture
def queues(roles, outputs_factory, small_codebook):
    """The coder has 3 stories in study A (1 done) and 2 in a second study C (none done)."""
    coder = roles["users"]["coder"]
    study_c = Study.objects.create(name="Study C", created_by=roles["users"]["admin"])
    Membership.objects.create(study=study_c, user=coder, role="coder")
    made = {}
    for study, n, done in ((roles["a"], 3, 1), (study_c, 2, 0)):
        cb, _ = small_codebook(study, name=f"Codebook of {study.name}")
        outs = outputs_factory(study, [f"Story {i}" for i in range(n)])
        for i, out in enumerate(outs):
            Assignment.objects.create(
                study=study,
                codebook=cb,
                output=out,
                coder=coder,
                position=i + 1,
                status="done" if i < done else "pending",
            )
        made[study.name] = (study, cb, outs)
    return {"coder": coder, "made": made, "roles": roles}


def sign_in(username):
    client = Client()
    r = client.post(reverse("login"), {"username": username, "password": PASSWORD})
    assert r.status_code == 302, r.content.decode()[:500]
    return client, r["Location"]


def test_a_coder_lands_on_my_work(queues):
    _, location = sign_in("coder")
    assert location == reverse("my-work")


@pytest.mark.parametrize("username", ["researcher", "admin", "staff"])
def test_researchers_and_admins_still_land_on_the_studies(queues, username):
    _, location = sign_in(username)
    assert location == reverse("study-list")


def test_a_next_link_wins_over_my_work(queues):
    client = Client()
    target = reverse("study-dashboard", args=[queues["roles"]["a"].pk])
    r = client.post(reverse("login") + f"?next={target}", {"username": "coder", "password": PASSWORD, "next": target})
    assert r.status_code == 302 and r["Location"] == target


def test_my_work_lists_the_coders_queues_across_studies_with_progress(queues, client_for):
    html = client_for(queues["coder"]).get(reverse("my-work")).content.decode()
    study_a, cb_a, _ = queues["made"]["Study A"]
    study_c, cb_c, _ = queues["made"]["Study C"]
    assert "Study A" in html and "Study C" in html
    assert "1 / 3 done" in html and "0 / 2 done" in html
    assert reverse("annotation-next", args=[study_a.pk, cb_a.pk]) in html
    assert reverse("annotation-next", args=[study_c.pk, cb_c.pk]) in html
    assert "New study" not in html


def test_my_work_leaves_out_trashed_studies_and_other_peoples_queues(queues, client_for, make_user):
    study_c, _, _ = queues["made"]["Study C"]
    trash.trash_study(study_c, actor=queues["roles"]["users"]["admin"])
    html = client_for(queues["coder"]).get(reverse("my-work")).content.decode()
    assert "Study A" in html and "Study C" not in html
    other = make_user("other")
    html = client_for(other).get(reverse("my-work")).content.decode()
    assert "Study A" not in html and "Nothing is assigned to you yet" in html


def test_my_work_says_when_a_queue_is_done(queues, client_for):
    Assignment.objects.filter(coder=queues["coder"]).update(status="done")
    html = client_for(queues["coder"]).get(reverse("my-work")).content.decode()
    assert "3 / 3 done" in html and "2 / 2 done" in html and "Continue coding" not in html


def test_my_work_needs_a_sign_in(client):
    r = client.get(reverse("my-work"))
    assert r.status_code == 302 and reverse("login") in r["Location"]


def test_a_coders_dashboard_shows_their_queue_not_row_counts(queues, client_for):
    study_a, cb_a, _ = queues["made"]["Study A"]
    html = client_for(queues["coder"]).get(reverse("study-dashboard", args=[study_a.pk])).content.decode()
    assert "Your work in this study" in html and "1 / 3 done" in html
    assert reverse("annotation-next", args=[study_a.pk, cb_a.pk]) in html
    assert "Study C" not in html  # this study's queue only
    assert "provider call" not in html.lower() and 'class="stats"' not in html


def test_a_researchers_dashboard_keeps_the_counts(queues, client_for):
    study_a, _, _ = queues["made"]["Study A"]
    html = (
        client_for(queues["roles"]["users"]["researcher"])
        .get(reverse("study-dashboard", args=[study_a.pk]))
        .content.decode()
    )
    assert 'class="stats"' in html


def test_the_invitation_link_has_a_copy_button(roles, client_for):
    study = roles["a"]
    r = client_for(roles["users"]["admin"]).post(
        reverse("study-members", args=[study.pk]), {"username": "ana", "email": "ana@example.org", "role": "coder"}
    )
    html = r.content.decode()
    assert r.status_code == 200 and 'id="invitation-link"' in html
    assert 'data-copy="invitation-link"' in html and "Copy link" in html
