"""The spending ledger and the caps it enforces.

Every provider call's tokens and cost go into `SpendingLedger`, one row per study, connection and calendar month
(UTC). A live attempt is counted when its row is opened (at its estimate) and corrected when it closes, in the same
transaction as the attempt row, so the ledger always equals the sum of the attempt rows' costs. A batch reserves its
estimate when it is submitted and trades the reservation for the answers' real cost when they are collected.

Before a call is opened, `admit` checks the study's cap (over all its calls) and the connection's monthly cap
(over all studies): a call whose estimate would cross one is not opened; its job waits, saying why, and resumes by
itself once the cap is raised. The check and the ledger update share one transaction and lock the rows they read
(the ledger rows, then the study and the connection), so workers in many processes never overshoot together.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypedDict, cast

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Sum
from django.utils import timezone

from stereoscope import bulk, jobs
from stereoscope.models import Role, Study
from stereoscope.permissions import has_role
from stereoscope.services import record_activity, set_spending_caps
from stereoscope.user_types import Actor

from ..models import ModelEndpoint, ProviderConnection, SpendingLedger

ZERO = Decimal("0")
LedgerKey = tuple[int, datetime.date]  # (connection id, month)
LedgerRow = tuple[int, int, int, Decimal, Decimal]  # (calls, input tokens, output tokens, cost, reserved)


class LedgerLine(TypedDict):
    """One ledger row as the Spending page lists it."""

    month: datetime.date
    connection__name: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    reserved_usd: Decimal


class SpendingSummary(TypedDict):
    """The Spending page's figures of one study."""

    rows: list[LedgerLine]  # by month and connection
    by_month: list[dict[str, object]]
    total_usd: Decimal
    reserved_usd: Decimal
    calls: int
    input_tokens: int
    output_tokens: int
    cap_usd: Decimal | None
    cap_limit_usd: Decimal | None
    remaining_usd: Decimal | None


@dataclass
class Charge:
    """One call (or one batch's reservation) to count: where it goes and what it costs (None: no prices)."""

    connection_id: int
    month: datetime.date
    cost: Decimal | None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 1
    label: str = ""  # the endpoint's name, for messages


class CapError(ValueError):
    pass


def month_of(moment: datetime.datetime | None) -> datetime.date:
    moment = moment or timezone.now()
    if timezone.is_aware(moment):
        moment = moment.astimezone(datetime.timezone.utc)
    return datetime.date(moment.year, moment.month, 1)


def _money(value: Decimal | float | str | None) -> str:
    return f"${Decimal(value or 0).quantize(Decimal('0.01')):,}"


def _upsert(study_id: int, rows: Mapping[LedgerKey, LedgerRow]) -> None:
    """Add to ledger rows, creating them as needed: rows are {(connection_id, month): (calls, in, out, cost, reserved)}.
    One upsert per row (stereoscope.bulk.upsert_add); it also takes the row's write lock."""
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]
    month_field = SpendingLedger._meta.get_field("month")
    money = SpendingLedger._meta.get_field("cost_usd")
    bulk.upsert_add(
        SpendingLedger,
        ["study_id", "connection_id", "month"],
        ["calls", "input_tokens", "output_tokens", "cost_usd", "reserved_usd"],
        [
            [
                study_id,
                connection_id,
                month_field.get_db_prep_save(month, db),
                calls,
                tokens_in,
                tokens_out,
                money.get_db_prep_save(cost, db),
                money.get_db_prep_save(reserved, db),
            ]
            for (connection_id, month), (calls, tokens_in, tokens_out, cost, reserved) in sorted(rows.items())
        ],
    )


def admit(
    study_id: int, charges: Sequence[Charge], *, reserve: bool = False, only_uncapped: bool = False
) -> tuple[list[bool], str, Decimal | None]:
    """Count the charges that fit under the caps, in order, and return (accepted flags, reason of the first that
    did not, the estimate that did not fit). Call inside the transaction that writes the calls' attempt rows.
    `reserve` counts them as reserved (a batch submission) instead of spent. `only_uncapped` admits them only when
    no cap applies to any of them (the runner opens a chunk's attempts ahead of their requests then): under a cap
    none is counted and every flag is False, with no reason, so each call is admitted on its own just before it is
    sent, against the real costs of the calls answered by then."""
    if not charges:
        return [], "", None
    keys = {(c.connection_id, c.month) for c in charges}
    _upsert(study_id, {key: (0, 0, 0, ZERO, ZERO) for key in keys})  # locks the rows before the caps are read
    study_cap = Study.objects.select_for_update().filter(pk=study_id).values_list("spending_cap_usd", flat=True).first()
    connection_caps = dict(
        ProviderConnection.objects.select_for_update()
        .filter(pk__in={c.connection_id for c in charges}, monthly_cap_usd__isnull=False)
        .values_list("pk", "monthly_cap_usd")
    )
    if only_uncapped and (study_cap is not None or connection_caps):
        return [False] * len(charges), "", None
    study_total = _study_total(study_id) if study_cap is not None else ZERO
    connection_totals = {key: _connection_month_total(*key) for key in keys if connection_caps.get(key[0]) is not None}
    accepted: list[bool]
    need: Decimal | None
    accepted, reason, need = [], "", None
    added: defaultdict[LedgerKey, list[int | Decimal]] = defaultdict(lambda: [0, 0, 0, ZERO, ZERO])
    for charge in charges:
        key = (charge.connection_id, charge.month)
        cap = connection_caps.get(charge.connection_id)
        problem = ""
        if (study_cap is not None or cap is not None) and charge.cost is None:
            problem = (
                f"Waiting: a spending cap applies, but “{charge.label}” has no prices, so its calls cannot be "
                "counted against it. Set the endpoint's prices (USD per million tokens)."
            )
        # charge.cost is not None below: a None cost under a cap took the branch above
        elif study_cap is not None and study_total + charge.cost > study_cap:  # type: ignore[operator]
            problem = (
                f"Waiting: the study's spending cap of {_money(study_cap)} is reached ({_money(study_total)} spent "
                f"or reserved; the next call needs about {_money(charge.cost)}). A study admin can raise it on the "
                "Spending page."
            )
        elif cap is not None and connection_totals[key] + charge.cost > cap:  # type: ignore[operator]
            name = ProviderConnection.objects.filter(pk=charge.connection_id).values_list("name", flat=True).first()
            problem = (
                f"Waiting: the connection “{name}” has reached its monthly cap of {_money(cap)} "
                f"({_money(connection_totals[key])} spent or reserved in {charge.month:%B %Y}; the next call needs "
                f"about {_money(charge.cost)}). Site staff can raise it."
            )
        if problem:
            accepted.append(False)
            if not reason:
                reason, need = problem, charge.cost
            continue
        accepted.append(True)
        cost = charge.cost or ZERO
        study_total += cost
        if key in connection_totals:
            connection_totals[key] += cost
        row = added[key]
        if reserve:
            row[4] += cost
        else:
            row[0] += charge.calls
            row[1] += charge.input_tokens
            row[2] += charge.output_tokens
            row[3] += cost
    _upsert(study_id, {key: cast(LedgerRow, tuple(row)) for key, row in added.items()})
    return accepted, reason, need


def record(study_id: int, charges: Iterable[Charge]) -> None:
    """Add charges that are already decided (corrections when an attempt closes, answers of a batch): no cap
    check. `calls` and tokens may be negative (an estimate replaced by the real figure)."""
    rows: defaultdict[LedgerKey, list[int | Decimal]] = defaultdict(lambda: [0, 0, 0, ZERO, ZERO])
    for charge in charges:
        row = rows[(charge.connection_id, charge.month)]
        row[0] += charge.calls
        row[1] += charge.input_tokens
        row[2] += charge.output_tokens
        row[3] += charge.cost or ZERO
    _upsert(study_id, {key: cast(LedgerRow, tuple(row)) for key, row in rows.items() if any(row)})


def release_reservation(
    study_id: int, connection_id: int, month: datetime.date, amount: Decimal | int | str | None
) -> None:
    if amount:
        _upsert(study_id, {(connection_id, month): (0, 0, 0, ZERO, -Decimal(amount))})


def _study_total(study_id: int) -> Decimal:
    totals: dict[str, Decimal | None] = SpendingLedger.objects.filter(study_id=study_id).aggregate(
        cost=Sum("cost_usd"), res=Sum("reserved_usd")
    )
    return (totals["cost"] or ZERO) + (totals["res"] or ZERO)


def _connection_month_total(connection_id: int, month: datetime.date) -> Decimal:
    totals: dict[str, Decimal | None] = SpendingLedger.objects.filter(
        connection_id=connection_id, month=month
    ).aggregate(cost=Sum("cost_usd"), res=Sum("reserved_usd"))
    return (totals["cost"] or ZERO) + (totals["res"] or ZERO)


# -- holds: checked when a worker starts on a job and by the sweep ------------------------------------------------


def budget_hold(study: Study, endpoints: Iterable[ModelEndpoint], need: Decimal | str | None = None) -> str:
    """Why a job of `study` on `endpoints` must wait for money, or "": a cap already reached (or too close to fit
    `need`, the estimate of the call that was held)."""
    need = Decimal(need) if need not in (None, "") else ZERO
    study_cap = Study.objects.filter(pk=study.pk).values_list("spending_cap_usd", flat=True).first()
    if study_cap is not None:
        spent = _study_total(study.pk)
        if spent + need > study_cap or spent >= study_cap:
            return (
                f"Waiting: the study's spending cap of {_money(study_cap)} is reached ({_money(spent)} spent or "
                "reserved). A study admin can raise it on the Spending page."
            )
    month = month_of(None)
    for endpoint in endpoints:
        # an endpoint without a connection finds none and is skipped
        connection = ProviderConnection.objects.filter(pk=endpoint.connection_id).first()  # type: ignore[misc]
        if connection is None or connection.monthly_cap_usd is None:
            continue
        spent = _connection_month_total(connection.pk, month)
        if spent + need > connection.monthly_cap_usd or spent >= connection.monthly_cap_usd:
            return (
                f"Waiting: the connection “{connection.name}” has reached its monthly cap of "
                f"{_money(connection.monthly_cap_usd)} ({_money(spent)} spent or reserved this month). Site staff "
                "can raise it."
            )
    return ""


# -- reads for the Spending page ----------------------------------------------------------------------------------


def study_spending(study: Study) -> SpendingSummary:
    """The study's ledger by month and connection, with totals, its cap and what is left."""
    rows = list(
        SpendingLedger.objects.filter(study=study)
        .select_related("connection")
        .order_by("month", "connection__name")
        .values("month", "connection__name", "calls", "input_tokens", "output_tokens", "cost_usd", "reserved_usd")
    )
    months: defaultdict[datetime.date, Decimal] = defaultdict(lambda: ZERO)
    for row in rows:
        months[row["month"]] += row["cost_usd"] + row["reserved_usd"]
    total = sum((r["cost_usd"] for r in rows), ZERO)
    reserved = sum((r["reserved_usd"] for r in rows), ZERO)
    cap = Study.objects.filter(pk=study.pk).values_list("spending_cap_usd", flat=True).first()
    return {
        "rows": rows,
        "by_month": [{"month": m, "cost_usd": c} for m, c in sorted(months.items())],
        "total_usd": total,
        "reserved_usd": reserved,
        "calls": sum(r["calls"] for r in rows),
        "input_tokens": sum(r["input_tokens"] for r in rows),
        "output_tokens": sum(r["output_tokens"] for r in rows),
        "cap_usd": cap,
        "cap_limit_usd": cap_limit(study),
        "remaining_usd": (cap - total - reserved) if cap is not None else None,
    }


def remaining_budget(study: Study) -> Decimal | None:
    """USD the study may still spend under its own cap (None: no cap)."""
    cap = Study.objects.filter(pk=study.pk).values_list("spending_cap_usd", flat=True).first()
    return None if cap is None else cap - _study_total(study.pk)


def cap_limit(study: Study) -> Decimal | None:
    """The highest cap the study's admins may set (None: no limit): the study's own limit set by staff, else the
    site's STUDY_SPENDING_CAP_LIMIT_USD."""
    limit: Decimal | None = Study.objects.filter(pk=study.pk).values_list("spending_cap_limit_usd", flat=True).first()
    if limit is not None:
        return limit
    default = getattr(settings, "STUDY_SPENDING_CAP_LIMIT_USD", None)
    return Decimal(str(default)) if default not in (None, "") else None


# -- writes -------------------------------------------------------------------------------------------------------


def _amount(value: object, what: str) -> Decimal | None:
    if value in (None, ""):
        return None
    try:
        amount = Decimal(str(value).strip().lstrip("$").replace(",", ""))
        if not amount.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        raise CapError(f"The {what} must be an amount in USD, e.g. 250 or 99.50; got {value!r}.") from None
    if amount < 0 or amount >= Decimal("10000000000"):
        raise CapError(f"The {what} must be between 0 and 9,999,999,999 USD.")
    return amount.quantize(Decimal("0.01"))


@transaction.atomic
def set_study_cap(study: Study, value: object, *, actor: Actor) -> Decimal | None:
    """A study admin sets the study's cap (empty: none), within the limit staff allow. Raising it wakes the
    study's waiting jobs."""
    if not (getattr(actor, "is_staff", False) or has_role(actor, study, Role.ADMIN)):
        raise CapError("Only the study's admins set its spending cap.")
    amount = _amount(value, "spending cap")
    limit = cap_limit(study)
    if limit is not None and (amount is None or amount > limit):
        raise CapError(f"Site staff allow this study a cap of at most {_money(limit)}; set a cap up to that.")
    set_spending_caps(study, spending_cap_usd=amount)
    record_activity(study, actor, "set the spending cap to", _money(amount) if amount is not None else "none")
    transaction.on_commit(_wake)
    return amount


@transaction.atomic
def set_study_cap_limit(study: Study, value: object, *, actor: Actor) -> Decimal | None:
    """Site staff set the highest cap a study's admins may set (empty: the site default)."""
    if not getattr(actor, "is_staff", False):
        raise CapError("Only site staff set a study's cap limit.")
    amount = _amount(value, "cap limit")
    set_spending_caps(study, spending_cap_limit_usd=amount)
    return amount


def _wake() -> None:

    jobs.wake_waiting()
