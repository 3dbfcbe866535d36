from tests.gencore.conftest import make_endpoint, make_toolkit, study  # noqa: F401
