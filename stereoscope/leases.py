"""One executor per long job (run, round, export): a lease of token + expiry taken with one conditional UPDATE.

A worker that dies leaves a lease that simply expires; the next worker takes over and does only what is missing.
"""
import uuid
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone


def acquire_lease(queryset, pk, seconds):
    """Take the lease of row `pk` in `queryset` if it is free or expired. Returns the token, or None."""
    token = uuid.uuid4().hex
    now = timezone.now()
    got = queryset.filter(Q(lease_token="") | Q(lease_expires_at__lt=now), pk=pk).update(
        lease_token=token, lease_expires_at=now + timedelta(seconds=seconds))
    return token if got else None
