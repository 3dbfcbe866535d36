"""toolkit_import / toolkit_export commands: round trip, clear errors, nothing half-imported."""

import pytest
from django.core.management import CommandError, call_command

from generation.models import Toolkit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_export_then_import_round_trips(roles, phase3, tmp_path, fmt):
    out = tmp_path / f"phase3.{fmt}"
    call_command("toolkit_export", phase3.pk, "--format", fmt, "--out", str(out), stderr=open("/dev/null", "w"))
    call_command("toolkit_import", roles["a"].pk, str(out), stdout=open("/dev/null", "w"))
    copy = Toolkit.objects.get(study=roles["a"])
    assert copy.items.count() == 30 and copy.dimensions.count() == 6
    again = tmp_path / f"again.{fmt}"
    call_command("toolkit_export", copy.pk, "--format", fmt, "--out", str(again), stderr=open("/dev/null", "w"))
    assert again.read_bytes() == out.read_bytes()


def test_import_errors_name_the_lines_and_save_nothing(roles, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("number,text\n1,About {x}.\n2,\n", encoding="utf-8")
    with pytest.raises(CommandError) as err:
        call_command("toolkit_import", roles["a"].pk, str(bad), "--name", "Bad")
    assert "Row 2 (item 1) uses the slot {x}" in str(err.value) and "Row 3 (item 2), text: needs a text" in str(
        err.value
    )
    assert not Toolkit.objects.filter(study=roles["a"]).exists()
    good = tmp_path / "items.txt"
    good.write_text("number,text\n1,Hello.\n", encoding="utf-8")
    with pytest.raises(CommandError, match="Cannot tell the format"):
        call_command("toolkit_import", roles["a"].pk, str(good))
    call_command(
        "toolkit_import", roles["a"].pk, str(good), "--format", "csv", "--name", "Plain", stdout=open("/dev/null", "w")
    )
    assert Toolkit.objects.get(study=roles["a"], name="Plain").items.get().text == "Hello."
    with pytest.raises(CommandError, match="No study with id"):
        call_command("toolkit_import", 999999, str(good))
    with pytest.raises(CommandError, match="No toolkit with id"):
        call_command("toolkit_export", 999999)


def test_export_to_stdout(roles, make_toolkit, capsys):
    toolkit = make_toolkit(items=[{"number": 1, "text": "Hi."}])
    call_command("toolkit_export", toolkit.pk, "--format", "csv")
    assert capsys.readouterr().out.startswith("kind,number,name,text")
