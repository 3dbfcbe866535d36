"""Issue 32: in a blind study, the dashboard shows a coder only their own activity and (issue 35) their own queue;
researchers and admins still see everyone's counts."""

import re

import pytest

from annotation.models import Assignment, Memo
from stereoscope.models import Membership
from stereoscope.services import add_member


def _count(html, label):
    return int(re.search(rf'<span class="num">(\d+)</span><span class="label">{label}</span>', html).group(1))


@pytest.mark.django_db
def test_coder_sees_only_own_activity_and_counts(roles, make_user, client_for, outputs_factory, small_codebook):
    study, users = roles["a"], roles["users"]
    bravo = make_user("coderbravo")
    add_member(study=study, username="coderbravo", role="coder", actor=users["admin"])
    codebook, _ = small_codebook(study)
    stories = outputs_factory(study, ["One story.", "Two story.", "Three story."])
    for position, story in enumerate(stories):
        Assignment.objects.create(study=study, codebook=codebook, output=story, coder=bravo, position=position)
    Assignment.objects.create(study=study, codebook=codebook, output=stories[0], coder=users["coder"], position=0)
    Memo.objects.create(study=study, author=bravo, output=stories[0], text="bravo's secret memo")
    Memo.objects.create(study=study, author=bravo, output=stories[1], text="another")
    Memo.objects.create(study=study, author=users["coder"], output=stories[0], text="mine")
    from stereoscope.services import record_activity

    record_activity(study, bravo, "wrote a memo on", "story 1")
    record_activity(study, users["coder"], "finished", "story 1")

    html = client_for(users["coder"]).get(f"/studies/{study.pk}/").content.decode()
    assert "coderbravo" not in html
    assert "wrote a memo on" not in html and "finished" in html
    # issue 35: a coder's dashboard shows their own queue and progress (1 story, not bravo's 3), not row counts
    assert "0 / 1 done" in html and "0 / 3 done" not in html and 'class="stats"' not in html

    researcher = client_for(users["researcher"]).get(f"/studies/{study.pk}/").content.decode()
    assert "added member coderbravo (coder)" in researcher and "wrote a memo on" in researcher
    assert _count(researcher, "memos") == 3 and _count(researcher, "assignments") == 4
    assert Membership.objects.filter(study=study).count() == 4
