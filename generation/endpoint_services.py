"""Writes for model endpoints. The pages, the API, recipes, commands and the admin validate through
`endpoint_problems`.

An endpoint picks a provider connection (which fixes the host and the key variable, chosen by site staff) and a
model; it never names a base URL or a key variable itself, and a request that tries to is refused.
"""

from decimal import Decimal, InvalidOperation

from django.db import transaction

from stereoscope.services import record_activity
from stereoscope.untrusted import loads_json

from . import connections
from .models import BATCH_PROVIDERS, ModelEndpoint, Provider
from .providers.base import ProviderError, local_extra_message, missing_local_extra, validate_params

KEYED = {Provider.OPENAI, Provider.ANTHROPIC}  # these always need a key; compatible servers often do not
# Fields that belong to provider connections: an endpoint request that carries one is refused, never ignored.
CONNECTION_ONLY = ("base_url", "api_key_env", "api_key", "key", "api_base", "base_url_env")
LIMIT_FIELDS = ("max_concurrency", "requests_per_minute", "tokens_per_minute", "max_attempts")
FLOAT_FIELDS = ("timeout_seconds", "backoff_base_s", "backoff_max_s")
PRICE_FIELDS = (
    "input_price_per_mtok",
    "output_price_per_mtok",
    "batch_input_price_per_mtok",
    "batch_output_price_per_mtok",
)
EDITABLE = (
    "name",
    "connection",
    "provider",
    "model_id",
    "model_family",
    "default_params",
    *LIMIT_FIELDS,
    *FLOAT_FIELDS,
    *PRICE_FIELDS,
    "batch_enabled",
)
TRUE = ("1", "true", "on", "yes")
FALSE = ("", "0", "false", "off", "no")


class EndpointError(ValueError):
    def __init__(self, problems):
        self.problems = problems
        super().__init__(" ".join(f"{k}: {v}" if k != "__all__" else v for k, v in problems.items()))


def parse_params(value):
    """Default parameters from a dict or a JSON text; raises ValueError with a clear message."""
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        try:
            value = loads_json(value)
        except ValueError as exc:
            raise ValueError(
                f'Default parameters must be a JSON object, e.g. {{"temperature": 0.7}} ({exc}).'
            ) from None
    if not isinstance(value, dict):
        raise ValueError('Default parameters must be a JSON object, e.g. {"temperature": 0.7}.')
    try:
        validate_params(value)
    except ProviderError as exc:
        raise ValueError(str(exc)) from None
    return value


def _clean_connection(values, data, study, provider, model_id, clean, problems):
    """The connection: named (or numbered) among those open to the study; the provider follows it. A keyless
    kind (manual entry, local transformers) without one gets its built-in connection."""
    for field in CONNECTION_ONLY:
        if str(data.get(field) or "").strip():
            problems[field] = (
                "Endpoints do not set base URLs or key variables: choose a provider connection (site staff "
                "decide where keys go)."
            )
    chosen = values.get("connection")
    connection = None
    if study is None:  # a check without a study (a recipe being validated): connections are chosen on apply
        clean["connection"] = None
        return
    if chosen not in (None, ""):
        connection = connections.find_for_study(study, chosen) if study is not None else None
        if connection is None:
            problems["connection"] = f"No connection {chosen!r} is open to this study; {_choices(study)}"
    elif provider in connections.KEYLESS:
        connection = connections.default_connection(provider)
    else:
        problems["connection"] = f"Choose a provider connection; {_choices(study)}"
    if connection is not None:
        sent = data.get("provider")
        if sent and sent != connection.provider:
            problems["connection"] = (
                f"The connection “{connection.name}” is for {connection.get_provider_display()}, not {sent}; leave "
                "the provider out or give that one."
            )
        clean["provider"] = connection.provider
        if study is not None and model_id and (problem := connections.access_problem(connection, study.pk, model_id)):
            problems["connection"] = problem[0].upper() + problem[1:]
    clean["connection"] = connection


def _choices(study):
    names = connections.names_open_to(study) if study is not None else []
    if not names:
        return "none is open to this study yet (site staff add connections under Site settings)."
    return "choose one of: " + ", ".join(f"“{n}”" for n in names) + "."


def endpoint_problems(data, study=None, instance=None):
    """Cleaned values and a {field: message} dict of problems for endpoint fields (missing fields keep the
    instance's value)."""
    if instance is not None:
        current = {f: getattr(instance, f) for f in EDITABLE}
    else:
        current = {f: ModelEndpoint._meta.get_field(f).get_default() for f in EDITABLE}
    values = {**current, **{k: v for k, v in data.items() if k in EDITABLE}}
    if "connection" in data and "provider" not in data:
        values["provider"] = ""  # follows the connection chosen now
    problems, clean = {}, {}
    name = str(values.get("name") or "").strip()
    if not name:
        problems["name"] = "Give the endpoint a name."
    elif (
        study is not None
        and ModelEndpoint.objects.filter(study=study, name=name).exclude(pk=getattr(instance, "pk", None)).exists()
    ):
        problems["name"] = f"This study already has an endpoint named “{name}”."
    clean["name"] = name[:200]
    provider = values.get("provider") or ""
    model_id = str(values.get("model_id") or "").strip()
    if not model_id:
        problems["model_id"] = "Give the model id (or a local path, or the model you paste answers from)."
    clean["model_id"] = model_id[:300]
    clean["model_family"] = str(values.get("model_family") or "").strip()[:100]
    clean["provider"] = provider
    _clean_connection(values, data, study, provider, model_id, clean, problems)
    provider = clean["provider"]
    if provider not in Provider.values:
        problems["provider"] = f"Unknown provider {provider!r}; choose one of {', '.join(Provider.values)}."
    elif provider == Provider.TRANSFORMERS and (missing := missing_local_extra()):
        problems["provider"] = local_extra_message(missing)
    try:
        clean["default_params"] = parse_params(values.get("default_params"))
    except ValueError as exc:
        problems["default_params"] = str(exc)
    for field in LIMIT_FIELDS:
        value = values.get(field)
        if value in (None, ""):
            if field in ("max_concurrency", "max_attempts"):
                problems[field] = "Required: a whole number of at least 1."
            clean[field] = None
            continue
        try:
            number = int(value)
            if isinstance(value, float) and value != number or isinstance(value, bool):
                raise ValueError
        except (TypeError, ValueError):
            problems[field] = f"Must be a whole number, got {value!r}."
            continue
        if number < 1:
            problems[field] = "Must be at least 1."
        clean[field] = number
    for field in FLOAT_FIELDS:
        value = values.get(field)
        if value in (None, ""):
            continue  # the model default
        try:
            number = float(value)
        except (TypeError, ValueError):
            problems[field] = f"Must be a number of seconds, got {value!r}."
            continue
        if not 0 <= number <= 3600 or (field == "timeout_seconds" and number <= 0):
            problems[field] = "Must be between 0 and 3600 seconds (a timeout above 0)."
        clean[field] = number
    for field in PRICE_FIELDS:
        value = values.get(field)
        if value in (None, ""):
            clean[field] = None
            continue
        try:
            price = Decimal(str(value))
            if not price.is_finite():
                raise InvalidOperation
        except (InvalidOperation, ValueError):
            problems[field] = f"Must be a price in USD per million tokens, got {value!r}."
            continue
        if price < 0 or price >= Decimal("1000000"):
            problems[field] = "Must be between 0 and 999999."
        clean[field] = price
    batch = values.get("batch_enabled")
    if isinstance(batch, str) and batch.strip().lower() in TRUE + FALSE:
        batch = batch.strip().lower() in TRUE
    if batch is None:
        batch = False
    if not isinstance(batch, bool):
        problems["batch_enabled"] = f"Must be true or false, got {batch!r}."
    elif batch and provider in Provider.values and provider not in BATCH_PROVIDERS:
        problems["batch_enabled"] = (
            "Batch mode needs a provider with a batch API: OpenAI, Anthropic or an "
            "OpenAI-compatible server that implements it."
        )
    clean["batch_enabled"] = batch if isinstance(batch, bool) else False
    return clean, problems


@transaction.atomic
def save_endpoint(study, data, *, instance=None, actor=None):
    clean, problems = endpoint_problems(data, study, instance)
    if problems:
        raise EndpointError(problems)
    endpoint = instance or ModelEndpoint(study=study)
    for field, value in clean.items():
        setattr(endpoint, field, value)
    endpoint.save()
    record_activity(study, actor, "updated model endpoint" if instance else "added model endpoint", endpoint.name)
    return endpoint


@transaction.atomic
def delete_endpoint(endpoint, actor=None):
    if endpoint.outputs.exists() or endpoint.runs.exists():
        raise EndpointError({"__all__": f"“{endpoint.name}” is used by runs; it stays for their provenance."})
    record_activity(endpoint.study, actor, "deleted model endpoint", endpoint.name)
    endpoint.delete()
