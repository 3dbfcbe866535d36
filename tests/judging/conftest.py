from tests.generation.runs.conftest import make_endpoint, make_toolkit, study  # noqa: F401
