"""REFI-QDA: a user named "Ana Coder" in an imported project comes back as "Ana Coder" (the username may differ)."""

import io
import zipfile

import pytest
from lxml import etree

from annotation import refi_qda as rq
from annotation.refi_services import import_qdpx
from exports.services import write_export
from stereoscope.models import Study
from tests.exports.test_qdpx_import import foreign_qdpx


def exported_user_names(study, tmp_path, **raw):
    path = tmp_path / "p.qdpx"
    write_export(study, "qdpx", path, options=raw)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        root = etree.fromstring(zf.read("project.qde"))
    return sorted(u.get("name") for u in root.iterfind(".//q:Users/q:User", {"q": rq.NS})), path.read_bytes()


@pytest.mark.django_db
def test_imported_display_names_survive_export_and_reimport(tmp_path, django_user_model):
    importer = django_user_model.objects.create_user("importer")
    study = Study.objects.create(name="Target")
    report = import_qdpx(study, foreign_qdpx(), filename="seed.qdpx", actor=importer)
    assert sorted(report["users_created"]) == ["Anna_Coder", "Ben_Coder"]  # usernames stay valid
    assert django_user_model.objects.get(username="Anna_Coder").get_full_name() == "Anna Coder"
    names, data = exported_user_names(study, tmp_path)
    assert "Anna Coder" in names and "Ben Coder" in names and "Anna_Coder" not in names
    # our own export maps back to the same accounts
    again = Study.objects.create(name="Again")
    assert import_qdpx(again, data, filename="p.qdpx", actor=importer)["users_created"] == []


@pytest.mark.django_db
def test_users_without_a_full_name_export_their_username(tmp_path, django_user_model):
    importer = django_user_model.objects.create_user("importer")
    study = Study.objects.create(name="Target")
    import_qdpx(study, foreign_qdpx(), filename="seed.qdpx", actor=importer)
    django_user_model.objects.filter(username="Ben_Coder").update(first_name="", last_name="")
    names, _ = exported_user_names(study, tmp_path)
    assert "Ben_Coder" in names and "Anna Coder" in names
