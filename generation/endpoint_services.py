"""Writes for model endpoints. The pages, the API and commands validate through `endpoint_problems`.

An endpoint stores the NAME of the environment variable that holds its key, never the key itself.
"""
import re
from decimal import Decimal, InvalidOperation

from django.db import transaction

from stereoscope.services import record_activity
from stereoscope.untrusted import loads_json

from .key_variables import key_variable_problem
from .models import BATCH_PROVIDERS, ModelEndpoint, Provider
from .providers.base import ProviderError, local_extra_message, missing_local_extra, validate_params

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
KEYED = {Provider.OPENAI, Provider.ANTHROPIC}  # these always need a key; compatible servers often do not
LIMIT_FIELDS = ("max_concurrency", "requests_per_minute", "tokens_per_minute", "max_attempts")
FLOAT_FIELDS = ("timeout_seconds", "backoff_base_s", "backoff_max_s")
PRICE_FIELDS = ("input_price_per_mtok", "output_price_per_mtok", "batch_input_price_per_mtok",
                "batch_output_price_per_mtok")
EDITABLE = ("name", "provider", "model_id", "model_family", "base_url", "api_key_env", "default_params",
            *LIMIT_FIELDS, *FLOAT_FIELDS, *PRICE_FIELDS, "batch_enabled")
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
            raise ValueError(f"Default parameters must be a JSON object, e.g. {{\"temperature\": 0.7}} ({exc}).") from None
    if not isinstance(value, dict):
        raise ValueError("Default parameters must be a JSON object, e.g. {\"temperature\": 0.7}.")
    try:
        validate_params(value)
    except ProviderError as exc:
        raise ValueError(str(exc)) from None
    return value


def endpoint_problems(data, study=None, instance=None):
    """Cleaned values and a {field: message} dict of problems for endpoint fields (missing fields keep the
    instance's value)."""
    if instance is not None:
        current = {f: getattr(instance, f) for f in EDITABLE}
    else:
        current = {f: ModelEndpoint._meta.get_field(f).get_default() for f in EDITABLE}
    values = {**current, **{k: v for k, v in data.items() if k in EDITABLE}}
    problems, clean = {}, {}
    name = str(values.get("name") or "").strip()
    if not name:
        problems["name"] = "Give the endpoint a name."
    elif study is not None and ModelEndpoint.objects.filter(study=study, name=name).exclude(
            pk=getattr(instance, "pk", None)).exists():
        problems["name"] = f"This study already has an endpoint named “{name}”."
    clean["name"] = name[:200]
    provider = values.get("provider") or ""
    if provider not in Provider.values:
        problems["provider"] = f"Unknown provider {provider!r}; choose one of {', '.join(Provider.values)}."
    clean["provider"] = provider
    if provider == Provider.TRANSFORMERS and (missing := missing_local_extra()):
        problems["provider"] = local_extra_message(missing)
    model_id = str(values.get("model_id") or "").strip()
    if not model_id:
        problems["model_id"] = "Give the model id (or a local path, or the model you paste answers from)."
    clean["model_id"] = model_id[:300]
    clean["model_family"] = str(values.get("model_family") or "").strip()[:100]
    base_url = str(values.get("base_url") or "").strip()
    if base_url and not re.match(r"^https?://[^\s/]+", base_url):
        problems["base_url"] = "The base URL must start with http:// or https://."
    if provider == Provider.OPENAI_COMPATIBLE and not base_url:
        problems["base_url"] = "An OpenAI-compatible server needs its base URL, e.g. http://localhost:8000/v1."
    clean["base_url"] = base_url
    env = str(values.get("api_key_env") or "").strip()
    if env and not ENV_NAME.match(env):
        problems["api_key_env"] = ("Enter the NAME of an environment variable (letters, digits, underscores), "
                                   "e.g. OPENAI_API_KEY, never the key itself.")
        env = ""
    elif key_variable_problem(env):
        problems["api_key_env"] = key_variable_problem(env)
    if provider in KEYED and not env and "api_key_env" not in problems:
        problems["api_key_env"] = "Name the environment variable that holds this provider's key, e.g. OPENAI_API_KEY."
    clean["api_key_env"] = env
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
        problems["batch_enabled"] = ("Batch mode needs a provider with a batch API: OpenAI, Anthropic or an "
                                     "OpenAI-compatible server that implements it.")
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
