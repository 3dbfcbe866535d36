"""Two requests for the study report's PDF at the same moment make one export job, not two: the second waits for
the study's row lock until the first job is committed, then sees it and is refused."""

import threading
import time

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)


def _waiting_on_a_lock():
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted"
        )  # live, unlike pg_stat_activity in a transaction
        return cursor.fetchone()[0]


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="row locks are PostgreSQL's: SQLite's BEGIN IMMEDIATE already lets one writing transaction in at a time",
)
def test_two_pdf_requests_at_once_make_one_job(roles, monkeypatch, settings, tmp_path):
    import reports.render
    from exports import services
    from exports.models import ExportJob

    settings.EXPORT_ROOT = tmp_path
    monkeypatch.setattr(reports.render, "pdf_problem", lambda: None)  # the extra is not what this test is about
    monkeypatch.setattr(services.jobs, "launch", lambda kind, job: None)  # queued: no worker runs it here
    study, actor = roles["a"], roles["users"]["researcher"]
    first_created, second_done = threading.Event(), threading.Event()
    real_record = services.record_activity
    outcome = {}

    def record_then_hold(study_, actor_, *args):  # inside the first request's transaction, after its job row
        real_record(study_, actor_, *args)
        if threading.current_thread().name == "first":
            first_created.set()
            deadline = time.monotonic() + 60
            while not second_done.is_set() and not _waiting_on_a_lock() and time.monotonic() < deadline:
                time.sleep(0.01)  # until the second request waits on the lock (or, without one, has finished)

    monkeypatch.setattr(services, "record_activity", record_then_hold)

    def request(name):
        try:
            outcome[name] = services.create_job(study, fmt="report", actor=actor)
        except services.ExportError as exc:
            outcome[name] = exc
        finally:
            if name == "second":
                second_done.set()
            connection.close()

    first = threading.Thread(target=request, args=("first",), name="first")
    first.start()
    assert first_created.wait(60)
    second = threading.Thread(target=request, args=("second",), name="second")
    second.start()
    first.join(90)
    second.join(90)
    assert ExportJob.objects.filter(study=study, format="report").count() == 1
    assert isinstance(outcome["first"], ExportJob)
    assert isinstance(outcome["second"], services.ExportError)
    assert f"already being made (export {outcome['first'].pk})" in str(outcome["second"])
