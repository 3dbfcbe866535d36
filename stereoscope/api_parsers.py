"""The API's JSON parser: a body must be a JSON object, since every endpoint reads named fields from it, and holds
no NaN or ±Infinity (no database stores them in a JSON column)."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .untrusted import nonfinite_problem

JSON_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class JSONObjectParser(JSONParser):
    """JSONParser that answers 400 for a body that is valid JSON but not an object (a list, a number, ...)."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            kind = JSON_KINDS.get(type(data), type(data).__name__)
            raise ParseError(f"The request body must be a JSON object with named fields, not a {kind}.")
        problem = nonfinite_problem(data, "The request body")  # 1e999 reads as Infinity; NaN is refused already
        if problem:
            raise ParseError(problem)
        return data
