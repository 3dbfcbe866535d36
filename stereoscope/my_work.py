"""My work: a person's queues across the studies they are in. The project package imports no app, so apps register
a source of queues here (annotation registers its coding queues in its AppConfig.ready)."""

from .models import Membership, Role

_sources = []


def register_work_source(source):
    """`source(user, studies)` returns the user's queues in those studies as dicts with study (a Study), label,
    done, total and url (where to continue, or the queue's page when it is done)."""
    if source not in _sources:
        _sources.append(source)


def queues_for(user, studies):
    """Every registered source's queues for `user` in `studies` (a queryset of live studies), by study then label."""
    rows = []
    for source in _sources:
        rows += source(user, studies)
    for row in rows:
        row["percent"] = round(100 * row["done"] / row["total"]) if row["total"] else 0
        row["finished"] = row["done"] >= row["total"]
    return sorted(rows, key=lambda r: (r["study"].name.lower(), r["study"].pk, r["label"]))


def lands_on_my_work(user):
    """A coder (a member only as coder, not site staff) starts on My work after signing in, not on the studies."""
    if not user.is_authenticated or user.is_staff or user.is_superuser:
        return False
    roles = set(Membership.objects.filter(user=user, study__trashed_at__isnull=True).values_list("role", flat=True))
    return Role.CODER in roles and not roles & {Role.RESEARCHER, Role.ADMIN}
