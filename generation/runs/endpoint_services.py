"""Writes for model endpoints. The pages, the API, recipes, commands and the admin validate through
`endpoint_problems`.

An endpoint picks a provider connection (which fixes the host and the key variable, chosen by site staff) and a
model; it never names a base URL or a key variable itself, and a request that tries to is refused.
"""

import math
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.db import transaction

from stereoscope import schemas
from stereoscope.services import record_activity
from stereoscope.untrusted import loads_json

from ..models import BATCH_PROVIDERS, ModelEndpoint, Provider
from . import connections
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
SCHEMA = schemas.register("endpoint", Path(__file__).resolve().parent.parent / "schema" / "endpoint.schema.json")
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


def _from_text(field, value):
    """A page form's text as the number or true/false it means; anything else is left for the schema to refuse."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if field == "batch_enabled":
        return text in TRUE if text in TRUE + FALSE else value
    if field in ("name", "model_id", "model_family") or not text:
        return value
    if field in LIMIT_FIELDS:
        return int(text) if re.fullmatch(r"[+-]?\d{1,18}", text) else value
    try:
        number = Decimal(text) if field in PRICE_FIELDS else float(text)
    except (ValueError, InvalidOperation):
        return value
    return number if field in FLOAT_FIELDS + PRICE_FIELDS and math.isfinite(number) else value


def _values(data, instance):
    if instance is not None:
        current = {f: getattr(instance, f) for f in EDITABLE}
    else:
        current = {f: ModelEndpoint._meta.get_field(f).get_default() for f in EDITABLE}
    values = {**current, **{k: v for k, v in data.items() if k in EDITABLE}}
    if "connection" in data and "provider" not in data:
        values["provider"] = ""  # follows the connection chosen now
    for field in ("name", "model_id", "model_family"):  # a number is a fine name or model id
        if isinstance(values.get(field), (int, float)) and not isinstance(values[field], bool):
            values[field] = str(values[field])
    return {k: _from_text(k, v) for k, v in values.items()}


def _clean_numbers(values, problems, clean):
    for field in LIMIT_FIELDS + FLOAT_FIELDS + PRICE_FIELDS:
        value = values.get(field)
        if field in problems or value in (None, ""):
            if field not in FLOAT_FIELDS:  # a float left out keeps the model default
                clean[field] = None
        elif field in LIMIT_FIELDS:
            clean[field] = int(value)
        elif field in FLOAT_FIELDS:
            clean[field] = float(value)
        else:
            clean[field] = Decimal(str(value))


def _check_provider(provider, batch, problems):
    if provider not in Provider.values:
        problems["provider"] = f"Unknown provider {provider!r}; choose one of {', '.join(Provider.values)}."
        return
    if provider == Provider.TRANSFORMERS and (missing := missing_local_extra()):
        problems["provider"] = local_extra_message(missing)
    if batch and provider not in BATCH_PROVIDERS and "batch_enabled" not in problems:  # said whatever else is wrong
        problems["batch_enabled"] = (
            "Batch mode needs a provider with a batch API: OpenAI, Anthropic or an "
            "OpenAI-compatible server that implements it."
        )


def endpoint_problems(data, study=None, instance=None):
    """Cleaned values and a {field: message} dict of problems for endpoint fields (missing fields keep the
    instance's value). The fields' shapes are the schema's (generation/schema/endpoint.schema.json); code checks
    the connection, the provider it implies, the parameters, batch mode per provider and unique names."""
    values = _values(data, instance)
    problems = {}
    for problem in schemas.problems(values, SCHEMA):
        problems.setdefault(re.split(r"[.\[]", problem.path)[0] or "__all__", problem.message)
    name, model_id = str(values.get("name") or "").strip(), str(values.get("model_id") or "").strip()
    if name and study is not None:
        others = ModelEndpoint.objects.filter(study=study, name=name).exclude(pk=getattr(instance, "pk", None))
        if others.exists():
            problems["name"] = f"This study already has an endpoint named “{name}”."
    clean = {"name": name[:200], "model_id": model_id[:300], "provider": values.get("provider") or ""}
    clean["model_family"] = str(values.get("model_family") or "").strip()[:100]
    _clean_connection(values, data, study, clean["provider"], model_id, clean, problems)
    if "default_params" not in problems:
        try:
            clean["default_params"] = parse_params(values.get("default_params"))
        except ValueError as exc:
            problems["default_params"] = str(exc)
    _clean_numbers(values, problems, clean)
    batch = values.get("batch_enabled")
    clean["batch_enabled"] = batch if isinstance(batch, bool) else False
    _check_provider(clean["provider"], clean["batch_enabled"], problems)
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
