"""Provider connections: where provider keys may go, decided by site staff.

A connection fixes a provider kind, a base URL and the name of the environment variable holding the key; study
endpoints pick a connection and a model and never name a host or a key variable themselves. Staff create, approve,
limit and delete connections here (the settings page, the API and the admin all call these functions); everything
that is about to call a provider asks `runtime_problem` first, so a connection that was closed, or a model that was
struck off, stops the calls at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from stereoscope import jobs
from stereoscope.models import Study
from stereoscope.untrusted import whole_number
from stereoscope.user_types import Actor

from ..models import ConnectionStatus, ModelEndpoint, Provider, ProviderConnection
from .key_variables import key_variable_problem

OFFICIAL_HOSTS: dict[str, str] = {Provider.OPENAI: "api.openai.com", Provider.ANTHROPIC: "api.anthropic.com"}
OFFICIAL_KEY_VARIABLES: dict[str, str] = {Provider.OPENAI: "OPENAI_API_KEY", Provider.ANTHROPIC: "ANTHROPIC_API_KEY"}
KEYLESS = (Provider.MANUAL, Provider.TRANSFORMERS)
DEFAULT_NAMES: dict[str, str] = {Provider.MANUAL: "Manual entry", Provider.TRANSFORMERS: "Local transformers"}
LIMIT_FIELDS = ("max_concurrency", "requests_per_minute", "tokens_per_minute")
EDITABLE = (
    "name",
    "provider",
    "base_url",
    "api_key_env",
    "allowed_models",
    *LIMIT_FIELDS,
    "all_studies",
    "studies",
    "monthly_cap_usd",
)


class ConnectionError(ValueError):  # noqa: A001 - the module's own error, never the builtin
    def __init__(self, problems: dict[str, str] | str) -> None:
        self.problems = problems if isinstance(problems, dict) else {"__all__": str(problems)}
        super().__init__(" ".join(f"{k}: {v}" if k != "__all__" else v for k, v in self.problems.items()))


def is_staff(actor: Actor) -> bool:
    return bool(actor is not None and getattr(actor, "is_active", False) and getattr(actor, "is_staff", False))


def _require_staff(actor: Actor) -> None:
    if not is_staff(actor):
        raise ConnectionError("Only site staff manage provider connections.")


def on_official_host(provider: str, base_url: str) -> bool:
    host = OFFICIAL_HOSTS.get(provider)
    if host is None:
        return False
    return not base_url or (urlsplit(base_url).hostname or "").lower() == host


# -- reads ------------------------------------------------------------------------------------------------------------


def open_to(study: Study | int) -> QuerySet[ProviderConnection]:
    """Connections a study may choose (approved or waiting for approval), by name."""
    return ProviderConnection.objects.filter(Q(all_studies=True) | Q(studies=study)).distinct().order_by("name")


def names_open_to(study: Study | int) -> list[str]:
    return list(open_to(study).values_list("name", flat=True))


def find_for_study(study: Study | int, value: ProviderConnection | int | str | None) -> ProviderConnection | None:
    """The connection named (or numbered) `value` that `study` may use, or None."""
    if isinstance(value, ProviderConnection):
        value = value.pk
    candidates = open_to(study)
    pk = whole_number(value)
    if pk is not None:
        found = candidates.filter(pk=pk).first()
        if found is not None:
            return found
    return candidates.filter(name=str(value or "").strip()).first()


def allows_study(connection: ProviderConnection, study_id: int) -> bool:
    return connection.all_studies or connection.studies.filter(pk=study_id).exists()


def model_allowed(connection: ProviderConnection, model_id: str | None) -> bool:
    allowed = [str(m).strip() for m in (connection.allowed_models or []) if str(m).strip()]
    return not allowed or (model_id or "").strip() in allowed


def access_problem(
    connection: ProviderConnection | None, study_id: int, model_id: str | None, provider: str | None = None
) -> str:
    """Why an endpoint of `study_id` may not use `connection` for `model_id` ("" when it may)."""
    if connection is None:
        return "it has no provider connection; choose one of the connections staff approved."
    if provider and provider != connection.provider:
        return f"the connection “{connection.name}” is for {connection.get_provider_display()}, not {provider}."
    if not allows_study(connection, study_id):
        return f"the connection “{connection.name}” is not open to this study (site staff choose its studies)."
    if not model_allowed(connection, model_id):
        listed = ", ".join(connection.allowed_models)
        return f"the connection “{connection.name}” does not serve the model {model_id!r} (it serves: {listed})."
    problem = key_variable_problem(connection.api_key_env)
    if problem:
        return f"the connection “{connection.name}”: {problem}"
    return ""


def pending_reason(connection: ProviderConnection | None) -> str:
    if connection is not None and connection.status != ConnectionStatus.APPROVED:
        why = f" {connection.status_reason}" if connection.status_reason else ""
        return f"the connection “{connection.name}” is waiting for approval by site staff.{why}"
    return ""


def start_problems(endpoints: Iterable[ModelEndpoint]) -> list[str]:
    """Why runs on these endpoints cannot start at all (a connection that does not allow them, a key variable that
    is not set); a connection waiting for approval is no reason: the job waits for it."""
    problems: list[str] = []
    for endpoint in endpoints:
        if endpoint.provider == Provider.MANUAL:
            continue
        connection = endpoint.connection
        problem = access_problem(connection, endpoint.study_id, endpoint.model_id, endpoint.provider)
        if problem:
            problems.append(f"“{endpoint.name}”: {problem}")
            continue
        assert connection is not None  # access_problem reports a missing connection
        needs_key = endpoint.provider in OFFICIAL_HOSTS or bool(connection.api_key_env)
        if needs_key and not connection.key_is_set:
            problems.append(
                f"“{endpoint.name}”: the key variable {connection.api_key_env or '(none named)'} of the connection "
                f"“{connection.name}” is not set in the server's environment"
            )
    return problems


def runtime_problem(endpoint: ModelEndpoint) -> str:
    """Checked again right before calls go out (run start, a worker building clients): "" when the endpoint's
    connection is approved, open to its study and serves its model."""
    # an endpoint without a connection finds none (access_problem says so)
    connection = ProviderConnection.objects.filter(pk=endpoint.connection_id).first()  # type: ignore[misc]
    if endpoint.provider == Provider.MANUAL:
        return ""
    return pending_reason(connection) or access_problem(connection, endpoint.study_id, endpoint.model_id)


def hold_reason(endpoints: Iterable[ModelEndpoint]) -> str:
    """The reason a job on these endpoints must wait, or "": a connection that is not approved or no longer
    allows the endpoint (staff can fix either; the job resumes by itself when they do)."""
    for endpoint in endpoints:
        problem = runtime_problem(endpoint)
        if problem:
            return f"Waiting: “{endpoint.name}”: {problem}"
    return ""


# -- writes -----------------------------------------------------------------------------------------------------------


def _money(value: object, field: str) -> tuple[Decimal | None, str]:
    if value in (None, ""):
        return None, ""
    try:
        number = Decimal(str(value))
        if not number.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError):
        return None, f"Must be an amount in USD, got {value!r}."
    if number < 0 or number >= Decimal("10000000000"):
        return None, "Must be between 0 and 9,999,999,999."
    return number.quantize(Decimal("0.01")), ""


# Connection fields as a form, the API or a recipe gives them (values of any JSON type, checked here).
ConnectionData = Mapping[str, Any]


def clean_connection(
    data: ConnectionData, instance: ProviderConnection | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Cleaned values and {field: message} problems for connection fields (missing fields keep the instance's)."""

    current: dict[str, Any] = {f: getattr(instance, f) for f in EDITABLE if f != "studies"} if instance else {}
    if instance is not None:
        current["studies"] = list(instance.studies.values_list("pk", flat=True))
    values = {**current, **{k: v for k, v in data.items() if k in EDITABLE}}
    problems: dict[str, str] = {}
    clean: dict[str, Any] = {}  # what the model fields take
    name = str(values.get("name") or "").strip()
    if not name:
        problems["name"] = "Give the connection a name."
    # pk=None (a new connection) excludes nothing
    elif ProviderConnection.objects.filter(name=name).exclude(pk=getattr(instance, "pk", None)).exists():  # type: ignore[misc]
        problems["name"] = f"A connection named “{name}” exists already."
    clean["name"] = name[:200]
    provider = values.get("provider") or ""
    if provider not in Provider.values:
        problems["provider"] = f"Unknown provider {provider!r}; choose one of {', '.join(Provider.values)}."
    clean["provider"] = provider
    base_url = str(values.get("base_url") or "").strip()
    if provider in KEYLESS:
        base_url = ""
    if base_url and urlsplit(base_url).scheme not in ("http", "https") or base_url and not urlsplit(base_url).hostname:
        problems["base_url"] = "The base URL must start with http:// or https:// and name a host."
    if provider == Provider.OPENAI_COMPATIBLE and not base_url:
        problems["base_url"] = "An OpenAI-compatible server needs its base URL, e.g. http://localhost:8000/v1."
    clean["base_url"] = base_url[:200]
    env = str(values.get("api_key_env") or "").strip()
    if provider in KEYLESS:
        env = ""
    if env and (problem := key_variable_problem(env)):
        problems["api_key_env"] = problem
    elif provider in OFFICIAL_HOSTS and not env:
        problems["api_key_env"] = "Name the environment variable that holds this provider's key."
    clean["api_key_env"] = env
    models = values.get("allowed_models") or []
    if isinstance(models, str):
        models = [m for m in (part.strip() for part in models.replace("\n", ",").split(",")) if m]
    if not isinstance(models, list) or not all(isinstance(m, str) and 0 < len(m) <= 300 for m in models):
        problems["allowed_models"] = "Give model ids as a list of names (or one per line); empty allows any."
        models = []
    clean["allowed_models"] = models
    for field in LIMIT_FIELDS:
        value = values.get(field)
        if value in (None, ""):
            clean[field] = None
            continue
        try:
            number = int(value)
            if isinstance(value, bool) or (isinstance(value, float) and value != number):
                raise ValueError
        except (TypeError, ValueError):
            problems[field] = f"Must be a whole number, got {value!r}."
            continue
        if number < 1:
            problems[field] = "Must be at least 1 (or empty for no limit)."
        clean[field] = number
    all_studies = values.get("all_studies", True)
    if isinstance(all_studies, str):
        all_studies = all_studies.strip().lower() in ("1", "true", "on", "yes")
    clean["all_studies"] = bool(all_studies)
    studies = values.get("studies") or []
    ids: list[int] = []
    for study in studies:
        pk = getattr(study, "pk", study)
        try:
            ids.append(int(pk))
        except (TypeError, ValueError):
            problems["studies"] = f"Unknown study {pk!r}."
    found = set(Study.objects.filter(pk__in=ids).values_list("pk", flat=True))
    if missing := [i for i in ids if i not in found]:
        problems["studies"] = f"No study {missing[0]}."
    clean["studies"] = sorted(found)
    clean["monthly_cap_usd"], message = _money(values.get("monthly_cap_usd"), "monthly_cap_usd")
    if message:
        problems["monthly_cap_usd"] = message
    return clean, problems


@transaction.atomic
def save_connection(
    data: ConnectionData, *, actor: Actor, instance: ProviderConnection | None = None
) -> ProviderConnection:
    """Create or change a connection (staff only). A connection staff save is approved: they chose its host."""
    _require_staff(actor)
    clean, problems = clean_connection(data, instance)
    if problems:
        raise ConnectionError(problems)
    connection = instance or ProviderConnection()
    studies = clean.pop("studies")
    for field, value in clean.items():
        setattr(connection, field, value)
    connection.status = ConnectionStatus.APPROVED
    connection.status_reason = ""
    connection.approved_by = actor  # type: ignore[assignment]  # staff (_require_staff): a signed-in User
    connection.approved_at = timezone.now()
    connection.save()
    connection.studies.set(studies)
    _sync_endpoints(connection)
    transaction.on_commit(wake_waiting_jobs)
    return connection


def _sync_endpoints(connection: ProviderConnection) -> None:
    """Endpoints follow their connection's provider kind."""
    ModelEndpoint.objects.filter(connection=connection).exclude(provider=connection.provider).update(
        provider=connection.provider
    )


@transaction.atomic
def approve_connection(connection: ProviderConnection, *, actor: Actor) -> ProviderConnection:
    _require_staff(actor)
    ProviderConnection.objects.filter(pk=connection.pk).update(
        status=ConnectionStatus.APPROVED, status_reason="", approved_by=actor, approved_at=timezone.now()
    )
    connection.refresh_from_db()
    transaction.on_commit(wake_waiting_jobs)
    return connection


@transaction.atomic
def delete_connection(connection: ProviderConnection, *, actor: Actor) -> None:
    _require_staff(actor)
    used = list(connection.endpoints.values_list("study__name", "name")[:5])
    if used:
        listed = "; ".join(f"“{e}” in “{s}”" for s, e in used)
        raise ConnectionError(f"“{connection.name}” is used by endpoints ({listed}); it stays for their provenance.")
    if connection.spending.exists():
        raise ConnectionError(f"“{connection.name}” has recorded spending; it stays for the ledger.")
    connection.delete()


def default_connection(provider: str) -> ProviderConnection:
    """The built-in approved connection of a keyless kind (manual entry, local transformers)."""
    connection, _ = ProviderConnection.objects.get_or_create(
        name=DEFAULT_NAMES[provider],
        defaults={"provider": provider, "status": ConnectionStatus.APPROVED, "all_studies": True},
    )
    return connection


def ensure_official_connections() -> list[str]:
    """Approved connections for the official OpenAI and Anthropic hosts whose key variables are set (make run).
    Returns the names created."""
    made: list[str] = []
    for provider, variable in OFFICIAL_KEY_VARIABLES.items():
        if not os.environ.get(variable) or key_variable_problem(variable):
            continue
        if ProviderConnection.objects.filter(provider=provider, base_url="", api_key_env=variable).exists():
            continue
        name = f"{Provider(provider).label} ({variable})"
        ProviderConnection.objects.create(
            name=name, provider=provider, api_key_env=variable, status=ConnectionStatus.APPROVED, all_studies=True
        )
        made.append(name)
    return made


def wake_waiting_jobs() -> list[tuple[str, int]]:
    """Queue again every waiting job whose reason has cleared (after an approval or a raised cap)."""

    return jobs.wake_waiting()
