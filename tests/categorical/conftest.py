from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401
from tests.categorical.test_regard_end_to_end import regard_study  # noqa: F401
from tests.exports.conftest import export_root  # noqa: F401
from tests.gencore.conftest import make_endpoint, make_toolkit, study  # noqa: F401
