"""The migration that adds Invitation records, for each account still without a password, the study it joined
first as the one that invited it (so only that study's admins can issue its link)."""

import pytest

from tests.migration_trip import empty_database, migrate

BEFORE = [("stereoscope", "0005_study_spending_caps")]
AFTER = [("stereoscope", "0006_invitation_records_the_inviting_study")]


@pytest.mark.django_db(transaction=True)
def test_pending_accounts_are_recorded_as_invited_by_their_first_study(tmp_path):
    with empty_database(tmp_path):
        old = migrate(BEFORE)
        User = old.get_model("auth", "User")
        Study, Membership = old.get_model("stereoscope", "Study"), old.get_model("stereoscope", "Membership")
        first, later = Study.objects.create(name="First"), Study.objects.create(name="Later")
        pending = User.objects.create(username="pending1", password="!unusable")
        active = User.objects.create(username="active", password="pbkdf2_sha256$1$x$y")
        loner = User.objects.create(username="loner", password="!unusable")
        import datetime

        t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        Membership.objects.create(study=later, user=pending, role="admin", added_at=t0 + datetime.timedelta(days=1))
        Membership.objects.create(study=first, user=pending, role="coder", added_at=t0)
        Membership.objects.create(study=first, user=active, role="coder", added_at=t0)

        new = migrate(AFTER)
        Invitation = new.get_model("stereoscope", "Invitation")
        assert {(i.user.username, i.study.name) for i in Invitation.objects.select_related("user", "study")} == {
            ("pending1", "First")
        }
        assert not Invitation.objects.filter(user_id__in=[active.pk, loner.pk]).exists()
