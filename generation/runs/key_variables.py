"""Which environment variables an endpoint may name as its API key.

Only the names the operator lists in PROVIDER_KEY_VARIABLES, and never a variable Django or the product reads itself
(settings.PRODUCT_ENV_VARIABLES and PRODUCT_ENV_PREFIXES): otherwise an endpoint with a base URL of the user's choice
could send SECRET_KEY or DATABASE_URL as its bearer token. The pages, the API, the admin, run start and every
provider call ask `key_variable_problem`; the settings are read on each call, so a changed allow-list applies at once.
"""

import os

from django.conf import settings


def is_product_variable(name: str) -> bool:
    prefixes = tuple(getattr(settings, "PRODUCT_ENV_PREFIXES", ()))
    return name in set(getattr(settings, "PRODUCT_ENV_VARIABLES", ())) or bool(prefixes and name.startswith(prefixes))


def allowed_key_variables() -> list[str]:
    return [n for n in getattr(settings, "PROVIDER_KEY_VARIABLES", []) if not is_product_variable(n)]


def key_variable_problem(name: str | None) -> str | None:
    """None when `name` may hold a provider key, else a message saying why not (never the value)."""
    name = (name or "").strip()
    if not name:
        return None
    if is_product_variable(name):
        return f"{name} is a variable the server itself uses; it can never be sent to a model provider."
    allowed = allowed_key_variables()
    if name not in allowed:
        listed = ", ".join(allowed) or "none"
        return (
            f"{name} is not an allowed key variable. The operator allows: {listed} "
            "(the PROVIDER_KEY_VARIABLES setting)."
        )
    return None


def key_value(name: str | None) -> str | None:
    """The value of an allowed key variable, or None when it is not allowed or not set."""
    name = (name or "").strip()
    if not name or key_variable_problem(name):
        return None
    return os.environ.get(name) or None
