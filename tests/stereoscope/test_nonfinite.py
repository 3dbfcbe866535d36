"""Issue 32: NaN and ±Infinity are refused wherever JSON parameters are accepted (they are not JSON, and a database
refuses them in a JSON column)."""

import json
import math

import pytest

from generation.runs.providers.base import ProviderError, validate_params
from stereoscope.untrusted import loads_json, nonfinite_path, nonfinite_problem


@pytest.mark.parametrize("text", ['{"t": NaN}', '{"t": Infinity}', '{"t": -Infinity}', '{"a": [1, {"t": 1e999}]}'])
def test_loads_json_refuses_nan_and_infinity(text):
    with pytest.raises(json.JSONDecodeError):
        loads_json(text)


def test_loads_json_keeps_ordinary_numbers():
    assert loads_json('{"t": 0.7, "n": [1, -2.5e10]}') == {"t": 0.7, "n": [1, -2.5e10]}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_validate_params_refuses_nan_and_infinity(value):
    with pytest.raises(ProviderError, match="finite"):
        validate_params({"temperature": value})
    with pytest.raises(ProviderError, match="NaN or Infinity"):
        validate_params({"stop": ["x", value]})
    assert validate_params({"temperature": 0.5, "max_tokens": 10}) == {"temperature": 0.5, "max_tokens": 10}


def test_nonfinite_path_names_where():
    assert nonfinite_path({"a": [1, {"b": math.nan}]}) == ["a", 1, "b"]
    assert nonfinite_path({"a": [1.5]}) is None
    assert nonfinite_problem({"params": {"t": math.inf}}, "The endpoint") == (
        "The endpoint at params.t is NaN or Infinity; write a finite number."
    )
