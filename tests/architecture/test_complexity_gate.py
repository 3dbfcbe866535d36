"""The complexity gate (`make lint` runs it on the code): a function more complex than 15 is found (a probe)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("complexity_gate", ROOT / "scripts" / "complexity_gate.py")
gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)


def test_a_new_complex_function_is_found(tmp_path):
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(20))
    (tmp_path / "probe.py").write_text(f"def tangled(x):\n{branches}\n    return -1\n")
    assert gate.offenders(tmp_path) == {"probe.py::tangled": 21}
