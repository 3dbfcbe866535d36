"""A coder's queue progress (issue 36): QueueProgress holds each queue's stories assigned and done, kept by database
triggers on annotation_assignment (migration annotation 0016), so the workspace reads two numbers instead of counting
the queue. These tests write assignments every way the code base does (services, bulk inserts, queryset updates and
deletes, a reassignment, cascades) and compare the counters with a real count after each. A migration that rebuilds
annotation_assignment on SQLite drops its triggers: these tests then fail."""

import pytest
from django.db.models import Count, Q

from annotation import selectors, services
from annotation.models import Assignment, AssignmentStatus, QueueProgress
from stereoscope.models import Membership

pytestmark = pytest.mark.django_db


def counted():
    """{(codebook, coder): (total, done)} counted from the assignments themselves."""
    rows = Assignment.objects.values("codebook_id", "coder_id").annotate(
        total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.DONE))
    )
    return {(r["codebook_id"], r["coder_id"]): (r["total"], r["done"]) for r in rows}


def kept():
    """The same from QueueProgress (queues emptied to 0 / 0 may keep their row)."""
    return {
        (p.codebook_id, p.coder_id): (p.total, p.done)
        for p in QueueProgress.objects.all()
        if (p.total, p.done) != (0, 0)
    }


@pytest.fixture
def setup(roles, outputs_factory, small_codebook, make_user):
    study = roles["a"]
    cb, _ = small_codebook(study)
    other_cb, _ = small_codebook(study, name="Other")
    coder, second = roles["users"]["coder"], make_user("second")
    Membership.objects.create(study=study, user=second, role="coder")
    outs = outputs_factory(study, [f"Story {i}." for i in range(6)])
    return {"study": study, "cb": cb, "other_cb": other_cb, "coder": coder, "second": second, "outs": outs}


def test_every_kind_of_assignment_write_keeps_the_counters(setup, roles):
    study, cb, other_cb, coder, second, outs = (
        setup[k] for k in ("study", "cb", "other_cb", "coder", "second", "outs")
    )
    one = Assignment.objects.create(study=study, codebook=cb, output=outs[0], coder=coder, position=1)
    assert kept() == counted() == {(cb.pk, coder.pk): (1, 0)}

    Assignment.objects.bulk_create(
        [Assignment(study=study, codebook=cb, output=o, coder=coder, position=i + 2) for i, o in enumerate(outs[1:4])]
        + [Assignment(study=study, codebook=other_cb, output=o, coder=second, status="done") for o in outs[:2]]
    )
    assert kept() == counted() == {(cb.pk, coder.pk): (4, 0), (other_cb.pk, second.pk): (2, 2)}

    services.set_assignment_status(one, user=coder, done=True)
    Assignment.objects.filter(codebook=cb, output__in=outs[1:3]).update(status=AssignmentStatus.DONE)
    Assignment.objects.filter(codebook=cb).update(position=7)  # changes nothing the counters hold
    assert kept() == counted() == {(cb.pk, coder.pk): (4, 3), (other_cb.pk, second.pk): (2, 2)}

    services.reassign_assignment(Assignment.objects.get(codebook=cb, output=outs[1]), coder=second)
    assert (
        kept() == counted() == {(cb.pk, coder.pk): (3, 2), (cb.pk, second.pk): (1, 0), (other_cb.pk, second.pk): (2, 2)}
    )

    services.delete_assignment(Assignment.objects.get(codebook=cb, output=outs[0]))
    Assignment.objects.filter(codebook=other_cb, output=outs[0]).delete()
    assert (
        kept() == counted() == {(cb.pk, coder.pk): (2, 1), (cb.pk, second.pk): (1, 0), (other_cb.pk, second.pk): (1, 1)}
    )

    second.delete()  # Django's cascade: the user's assignments and their counters go
    assert kept() == counted() == {(cb.pk, coder.pk): (2, 1)}
    assert selectors.queue_navigation(cb, coder)["total"] == 2


def test_assignments_planned_by_the_service_are_counted(setup):
    study, cb, coder, second = setup["study"], setup["cb"], setup["coder"], setup["second"]
    made = services.create_assignments(
        study, cb, outputs=services.outputs_of(study), coders=[coder, second], k=1, strategy="random_balanced", seed=3
    )
    assert len(made) == 6
    assert kept() == counted()
    assert sum(total for total, _ in kept().values()) == 6


def test_the_navigation_reads_the_counters_and_the_queue_order(setup):
    study, cb, coder, outs = setup["study"], setup["cb"], setup["coder"], setup["outs"]
    made = [
        Assignment.objects.create(study=study, codebook=cb, output=o, coder=coder, position=i + 1)
        for i, o in enumerate(outs[:4])
    ]
    Assignment.objects.filter(pk=made[1].pk).update(status=AssignmentStatus.DONE)
    nav = selectors.queue_navigation(cb, coder, made[2])
    assert (nav["total"], nav["done"]) == (4, 1)
    assert (nav["previous"], nav["next"]) == (outs[1].pk, outs[3].pk)
    # the last story: the next pending one wraps around to the start; the first has no previous one
    assert selectors.queue_navigation(cb, coder, made[3])["next"] == outs[0].pk
    assert selectors.queue_navigation(cb, coder, made[0])["previous"] is None
    # without an assignment (a researcher on a story outside their queue): the first pending story
    assert selectors.queue_navigation(cb, coder)["next"] == outs[0].pk
    # the only pending story has no next one
    Assignment.objects.exclude(pk=made[0].pk).update(status=AssignmentStatus.DONE)
    assert selectors.queue_navigation(cb, coder, made[0])["next"] is None
    nav = selectors.queue_navigation(cb, setup["second"])
    assert (nav["total"], nav["done"], nav["next"], nav["previous"]) == (0, 0, None, None)


def test_triggers_lost_are_installed_again_and_the_queues_recounted(setup):
    """SQLite drops a table's triggers when a migration rebuilds it; the next migrate (keep_counts after it)
    installs them again and counts the queues afresh, including what was written meanwhile."""
    from django.db import connection

    from annotation.models import QUEUE_PROGRESS
    from stereoscope.bulk import drop_kept_counts, keep_counts

    study, cb, coder, outs = setup["study"], setup["cb"], setup["coder"], setup["outs"]
    Assignment.objects.create(study=study, codebook=cb, output=outs[0], coder=coder, status="done")
    assert keep_counts(QUEUE_PROGRESS) is False  # in place: nothing to do
    drop_kept_counts(QUEUE_PROGRESS)
    Assignment.objects.create(study=study, codebook=cb, output=outs[1], coder=coder)  # not counted: no triggers
    assert kept() == {(cb.pk, coder.pk): (1, 1)} != counted()
    assert keep_counts(QUEUE_PROGRESS, using=connection.alias) is True
    assert kept() == counted() == {(cb.pk, coder.pk): (2, 1)}
    Assignment.objects.create(study=study, codebook=cb, output=outs[2], coder=coder)
    assert kept() == counted() == {(cb.pk, coder.pk): (3, 1)}


def test_the_admin_shows_counts_read_only_and_never_deletes_one_alone(setup, roles, client_for):
    staff = roles["users"]["staff"]
    staff.is_superuser = True
    staff.save()
    admin = client_for(staff)
    Assignment.objects.create(
        study=setup["study"], codebook=setup["cb"], coder=setup["coder"], output=setup["outs"][0], position=1
    )
    progress = QueueProgress.objects.get(codebook=setup["cb"], coder=setup["coder"])
    assert progress.total == 1  # kept by the triggers
    assert admin.get(f"/admin/annotation/queueprogress/{progress.pk}/delete/").status_code == 403
    listing = admin.get("/admin/annotation/queueprogress/")
    assert listing.status_code == 200 and "delete_selected" not in listing.content.decode()
    assert QueueProgress.objects.filter(pk=progress.pk).exists()
