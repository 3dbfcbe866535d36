"""The number parameters of the agreement pages and API (`?bootstrap=`, `?threshold=`, `?overlap=`), read one way
for both: a value outside the page's range, not a number, NaN or ±Infinity is an AgreementRequestError (a 400 that
names the parameter and its range), so it never reaches a computation or the JSON renderer."""

from stereoscope.untrusted import whole_number

from .rating_tables import AgreementRequestError


def whole_param(params, name, default, low, high):
    """The whole number `params[name]` (a QueryDict: request.GET or request.query_params) between `low` and `high`;
    `default` when absent or empty."""
    raw = params.get(name, "")
    if raw == "":
        return default
    size = whole_number(raw.removeprefix("-"))
    number = -size if size is not None and raw.startswith("-") else size
    if number is None or not low <= number <= high:
        raise AgreementRequestError(f"{name} must be a whole number between {low} and {high}.")
    return number


def number_param(params, name, default, low, high):
    """The number `params[name]` between `low` and `high` (NaN and ±Infinity fail the range check); `default` when
    absent or empty."""
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        number = float(raw)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise AgreementRequestError(f"{name} must be a number between {low} and {high}.")
    return number
