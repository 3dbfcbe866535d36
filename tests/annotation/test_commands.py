import csv
import json

import pytest
from django.core.management import CommandError, call_command
from lxml import etree

from annotation import services
from annotation.codebook_format import XSD_PATH
from annotation.models import Assignment, Codebook


def test_codebook_export_import_and_codings_export(roles, small_codebook, outputs_factory, tmp_path):
    study = roles["a"]
    cb, codes = small_codebook(study)
    qdc = tmp_path / "cb.qdc"
    call_command("codebook_export", cb.pk, str(qdc))
    assert etree.XMLSchema(etree.parse(str(XSD_PATH))).validate(etree.parse(str(qdc)))
    call_command("codebook_import", roles["b"].pk, str(qdc), "--name", "From file")
    copy = Codebook.objects.get(study=roles["b"], name="From file")
    assert copy.codes.count() == 6
    csv_path = tmp_path / "cb.csv"
    call_command("codebook_export", cb.pk, str(csv_path))
    call_command("codebook_import", roles["b"].pk, str(csv_path), "--name", "From file")
    assert Codebook.objects.get(study=roles["b"], name="From file", version=2).codes.count() == 6
    bad = tmp_path / "bad.qdc"
    bad.write_text("<CodeBook")
    before = Codebook.objects.count()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("codebook_import", study.pk, str(bad))
    assert Codebook.objects.count() == before

    out = outputs_factory(study, ["Zoë 👩‍🔬 ran the lab."])[0]
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=roles["users"]["coder"])
    services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=roles["users"]["coder"], start=0, end=5)
    target = tmp_path / "codings.csv"
    call_command("export_codings", study.pk, str(target), "--with-text")
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert len(rows) == 1 and rows[0]["quote"] == "Zoë 👩" and rows[0]["code_path"] == "Leadership/F charisma"
    assert rows[0]["story_text"][int(rows[0]["start"]):int(rows[0]["end"])] == rows[0]["quote"]
    jsonl = tmp_path / "codings.jsonl"
    call_command("export_codings", study.pk, str(jsonl), "--codebook", cb.pk)
    assert json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])["coder"] == "coder"
    with pytest.raises(CommandError, match="No codebook"):
        call_command("export_codings", study.pk, str(jsonl), "--codebook", 99999)


def test_export_codings_escapes_formulas_in_csv_not_jsonl(roles, outputs_factory, small_codebook, tmp_path):
    study = roles["a"]
    cb, codes = small_codebook(study)
    out = outputs_factory(study, ["=HYPERLINK(\"http://x\") led the lab."])[0]
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=roles["users"]["coder"])
    services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=roles["users"]["coder"],
                           start=0, end=10)
    target = tmp_path / "codings.csv"
    call_command("export_codings", study.pk, str(target), "--with-text")
    row = next(csv.DictReader(target.open(encoding="utf-8")))
    assert row["quote"] == "'=HYPERLINK" and row["story_text"].startswith("'=HYPERLINK")
    jsonl = tmp_path / "codings.jsonl"
    call_command("export_codings", study.pk, str(jsonl), "--with-text")
    assert json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])["quote"] == "=HYPERLINK"
