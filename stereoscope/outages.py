"""Infrastructure errors: the broker, Redis or the database is away. Such an error is never a unit's fault: the
unit goes back to pending and the job waits (backing off) until the service returns. A unit fails only for what
belongs to its request (the provider's refusal, an unparseable answer after re-asks, too many provider errors)."""

import random

_ERRORS: tuple[type[BaseException], ...] | None = None

OUTAGE_BACKOFF_BASE = 0.5  # seconds; doubles per consecutive outage error
OUTAGE_BACKOFF_MAX = 8.0  # a returning service is noticed within this many seconds


def infrastructure_errors() -> tuple[type[BaseException], ...]:
    """The exception classes that mean a service is away (only those of installed libraries)."""
    global _ERRORS
    if _ERRORS is None:
        from django.db import InterfaceError, OperationalError

        errors: list[type[BaseException]] = [OperationalError, InterfaceError]
        try:
            import redis.exceptions

            errors += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
        except ImportError:  # pragma: no cover - redis is a dependency
            pass
        try:
            import kombu.exceptions

            errors.append(kombu.exceptions.OperationalError)
        except ImportError:  # pragma: no cover - kombu comes with celery
            pass
        try:
            import amqp.exceptions

            errors.append(amqp.exceptions.ConnectionError)
        except ImportError:
            pass
        _ERRORS = tuple(errors)
    return _ERRORS


def is_infrastructure_error(exc: BaseException | None) -> bool:
    """True when `exc` (or what it was explicitly raised from) says a service is away, not that the work is wrong."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, infrastructure_errors()):
            return True
        seen.add(id(exc))
        exc = exc.__cause__
    return False


def outage_backoff(consecutive: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after the `consecutive`-th outage error in a row: base·2^(n−1), capped, jitter [50%, 100%]."""
    delay = min(OUTAGE_BACKOFF_MAX, OUTAGE_BACKOFF_BASE * float(2 ** max(0, consecutive - 1)))
    return delay * (0.5 + (rng or random).random() / 2)
