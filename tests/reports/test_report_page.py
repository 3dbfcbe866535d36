"""The Report page, its saved section toggles, the downloads, the API and the command; roles."""

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_an_empty_study_has_a_report_without_noise(roles, client_for):
    study = roles["a"]
    page = client_for(roles["users"]["researcher"]).get(f"/studies/{study.pk}/report/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "The study has no generation runs." in text and "How to reproduce" in text
    assert "manage.py recipe run recipe.yaml" in text


@pytest.mark.parametrize("who, status", [("coder", 403), ("outsider", 403), ("researcher", 200), ("admin", 200)])
def test_who_may_read_the_report(roles, client_for, api_for, who, status):
    """Coders do not read results (in blind mode they must not see other coders' work); researchers do."""
    study = roles["a"]
    user = roles["users"][who]
    assert client_for(user).get(f"/studies/{study.pk}/report/").status_code in (status, 404 if status == 403 else 200)
    api = api_for(user).get(f"/api/studies/{study.pk}/report/?format=md")
    assert api.status_code in (status, 404 if status == 403 else 200)
    assert client_for(user).get(f"/studies/{study.pk}/report/download.html").status_code in (
        status,
        404 if status == 403 else 200,
    )


def test_sections_are_saved_with_the_study_and_shape_every_format(roles, client_for, api_for):
    from reports.services import chosen_sections

    study, user = roles["a"], roles["users"]["researcher"]
    client = client_for(user)
    response = client.post(f"/studies/{study.pk}/report/sections/", {"sections": ["methods", "reproducibility"]})
    assert response.status_code == 302
    assert chosen_sections(study) == ["methods", "reproducibility"]
    doc = api_for(user).get(f"/api/studies/{study.pk}/report/").json()
    assert [s["key"] for s in doc["sections"]] == ["methods", "reproducibility"]
    md = api_for(user).get(f"/api/studies/{study.pk}/report/?format=md").content.decode()
    assert "## Methods" in md and "## Reproducibility" in md and "Results" not in md
    html = client.get(f"/studies/{study.pk}/report/download.html")
    assert html["Content-Disposition"] == f'attachment; filename="study-{study.pk}-report.html"'
    assert b"section-methods" in html.content and b"section-detection" not in html.content
    # an unknown section is refused with a message; nothing changes
    client.post(f"/studies/{study.pk}/report/sections/", {"sections": ["methods", "nope"]})
    assert chosen_sections(study) == ["methods", "reproducibility"]


def test_bad_format_is_400(roles, api_for):
    response = api_for(roles["users"]["researcher"]).get(f"/api/studies/{roles['a'].pk}/report/?format=docx")
    assert response.status_code == 400 and "format must be one of" in response.json()["detail"]


def test_html_is_self_contained_and_escapes_study_text(roles, client_for):
    from stereoscope.models import Study

    study = roles["a"]
    Study.objects.filter(pk=study.pk).update(description="<script>alert(1)</script> stories")
    html = client_for(roles["users"]["researcher"]).get(f"/studies/{study.pk}/report/download.html").content.decode()
    assert "<script>" not in html and "&lt;script&gt;" in html
    for remote in ("http://", "https://", "<link", "src="):
        assert remote not in html
    assert "@media print" in html


def test_command_writes_markdown(roles, tmp_path):
    out = tmp_path / "report.md"
    call_command("study_report", str(roles["a"].pk), "--format", "md", "--output", str(out))
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Study A") and "## Methods" in text


def test_undefined_values_never_reach_the_document():
    from reports.document import table
    from reports.numbers import num, p_value

    block = table("t", ["a", "b"], [[num(float("nan")), p_value(float("inf"))]], values=[[float("nan"), 0.5]])
    assert block["rows"] == [["—", "—"]] and block["values"] == [[None, 0.5]]
    assert num(-0.0001) == "0.00" and num(0.456, 2, bounded=True) == ".46" and p_value(0.0004) == "< .001"
