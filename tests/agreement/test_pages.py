"""Agreement pages and API: roles, bad input, XSS, adjudication, CSV exports, and the end-to-end check."""

import csv
import io
import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db


def page_urls(ns):
    sid = ns.study.pk
    target = f"code:{ns.charisma.pk}"
    return [
        reverse("agreement", args=[sid]),
        reverse("agreement-table", args=[sid]) + f"?target={target}",
        reverse("agreement-confusion", args=[sid])
        + f"?target={target}&a=coder:{ns.coders['ann'].pk}&b=coder:{ns.coders['bob'].pk}",
        reverse("agreement-export", args=[sid]) + f"?table=ratings&target={target}",
    ]


def api_urls(ns):
    base = f"/api/studies/{ns.study.pk}/"
    return [base + "agreement/", base + "agreement/table/?target=stereotype", base + "gold-labels/"]


def test_roles_on_every_page_and_endpoint(coded_study, client_for, api_for):
    ns = coded_study
    users = ns.users
    for url in page_urls(ns):
        assert client_for(users["outsider"]).get(url).status_code == 404, url
        assert client_for(users["b_admin"]).get(url).status_code == 404, url
        assert client_for(users["coder"]).get(url).status_code == 403, url
        assert client_for(users["researcher"]).get(url).status_code == 200, url
    gold_url = reverse("agreement-gold", args=[ns.study.pk])
    post = {"target": f"code:{ns.charisma.pk}", "output": ns.outputs[10].pk, "value": "1"}
    assert client_for(users["outsider"]).post(gold_url, post).status_code == 404
    assert client_for(users["coder"]).post(gold_url, post).status_code == 403
    for url in api_urls(ns):
        assert api_for(users["outsider"]).get(url).status_code == 404, url
        assert api_for(users["coder"]).get(url).status_code == 403, url
        assert api_for(users["researcher"]).get(url).status_code == 200, url
    assert api_for(users["coder"]).post(api_urls(ns)[2], post, format="json").status_code == 403
    from agreement.models import GoldLabel

    assert not GoldLabel.objects.exists()


def test_report_page_shows_codes_dimensions_matrices_and_flags(coded_study, client_for):
    ns = coded_study
    html = (
        client_for(ns.users["researcher"])
        .get(reverse("agreement", args=[ns.study.pk]) + "?bootstrap=100&threshold=0.9")
        .content.decode()
    )
    assert "M charisma in leadership" in html and "Leadership" in html
    assert 'id="coder-matrix"' in html and 'id="judge-human-matrix"' in html and 'id="judge-matrix"' in html
    assert re.search(r'class="low" data-target="code:%d"' % ns.charisma.pk, html)
    assert "Segments matched" in html
    # the sidebar links to the report
    assert f'href="/studies/{ns.study.pk}/agreement/"' in html


def test_bad_parameters_are_400_with_a_message(coded_study, client_for, api_for):
    ns = coded_study
    c = client_for(ns.users["researcher"])
    sid = ns.study.pk
    cases = [
        (reverse("agreement", args=[sid]) + "?bootstrap=lots", "bootstrap must be a whole number"),
        (reverse("agreement", args=[sid]) + "?overlap=2", "overlap must be a number between 0.01 and 1"),
        (reverse("agreement", args=[sid]) + "?codebook=99999", "No codebook 99999"),
        (reverse("agreement-table", args=[sid]) + "?target=nonsense", "Unknown target"),
        (
            reverse("agreement-table", args=[sid]) + f"?target=code:{ns.charisma.pk}&level=cardinal",
            "level must be one of",
        ),
        (reverse("agreement-table", args=[sid]) + "?target=stereotype&raters=judge:ghost", "Unknown rater"),
        (reverse("agreement-export", args=[sid]) + "?table=everything", "table must be one of"),
        (reverse("agreement-confusion", args=[sid]) + f"?target=code:{ns.charisma.pk}&a=x&b=y", "two different raters"),
    ]
    for url, message in cases:
        response = c.get(url)
        assert response.status_code == 400, url
        assert message in response.content.decode(), url
    api = api_for(ns.users["researcher"])
    base = f"/api/studies/{sid}/agreement/"
    for url, message in [
        (base + "table/?target=code:x", "Unknown target"),
        (base + "?bootstrap=-5", "bootstrap"),
        (base + "table/?target=stereotype&rounds=a", "rounds"),
        (base + "confusion/?target=stereotype&a=judge:model-x&b=judge:model-x", "two different"),
    ]:
        response = api.get(url)
        assert response.status_code == 400 and message in response.json()["detail"], url


def test_the_api_threshold_is_a_finite_number_in_the_pages_range(coded_study, api_for):
    """?threshold=nan, inf or 1e999 read as floats and reached the JSON renderer (a 500: "Out of range float values
    are not JSON compliant"); the API takes the page's range, -1 to 1, and says so."""
    api = api_for(coded_study.users["researcher"])
    base = f"/api/studies/{coded_study.study.pk}/agreement/"
    for raw in ("nan", "inf", "-Infinity", "1e999", "7", "x"):
        response = api.get(base + f"?threshold={raw}")
        assert response.status_code == 400 and "threshold must be" in response.json()["detail"], raw
    assert api.get(base + "?threshold=0.5").json()["low_threshold"] == 0.5


def test_xss_in_model_and_code_names_is_escaped(coded_study, client_for):
    from judging.models import Verdict

    ns = coded_study
    payload = "<script>alert('x')</script>"
    ns.charisma.name = payload
    ns.charisma.save()
    Verdict.objects.filter(judge_model="model-y").update(judge_model=payload)
    for out in ns.outputs:
        out.model_name = payload
        out.text = f"Story {payload} text"
        out.save()
    c = client_for(ns.users["researcher"])
    for url in [
        reverse("agreement", args=[ns.study.pk]) + "?bootstrap=0",
        reverse("agreement-table", args=[ns.study.pk]) + f"?target=code:{ns.charisma.pk}&bootstrap=0",
        reverse("agreement-table", args=[ns.study.pk]) + f"?target=code:{ns.charisma.pk}&bootstrap=0"
        f"&raters=coder:{ns.coders['ann'].pk}&raters=coder:{ns.coders['bob'].pk}",
        reverse("agreement-table", args=[ns.study.pk]) + "?target=stereotype&bootstrap=0",
    ]:
        html = c.get(url).content.decode()
        assert payload not in html
        assert "&lt;script&gt;" in html


def test_adjudication_page_flow_and_gold_as_rater(coded_study, client_for):
    from agreement.models import GoldLabel

    ns = coded_study
    c = client_for(ns.users["researcher"])
    target = f"code:{ns.charisma.pk}"
    table_url = reverse("agreement-table", args=[ns.study.pk]) + f"?target={target}&bootstrap=0"
    html = c.get(table_url).content.decode()
    assert "Disagreements (4)" in html
    # span codings: ann [0,30) vs bob [0,32) overlap 30/32, matched at 0.9, not at 0.95
    assert re.search(r'id="segment-pairs".*?<td class="num">0\.833</td>', html, re.S)
    strict = c.get(table_url + "&overlap=0.95").content.decode()
    assert re.search(r'id="segment-pairs".*?<td class="num">0\.000</td>', strict, re.S)
    assert c.get(table_url + "&overlap=0").status_code == 400
    gold_url = reverse("agreement-gold", args=[ns.study.pk])
    # htmx: the cell comes back with the chosen value marked
    response = c.post(gold_url, {"target": target, "output": ns.outputs[10].pk, "value": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'class="current"' in response.content.decode()
    # plain POST: redirect back with a message
    response = c.post(gold_url, {"target": target, "output": ns.outputs[11].pk, "value": "0", "next": table_url})
    assert response.status_code == 302 and response["Location"] == table_url
    bad = c.post(gold_url, {"target": target, "output": ns.outputs[12].pk, "value": "7"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and "must be one of 0, 1" in bad.content.decode()
    for post in [
        {"target": target, "output": "abc", "value": "clear"},
        {"target": target, "output": "abc", "value": "1"},
        {"target": "code:", "output": ns.outputs[12].pk, "value": "1"},
        {"target": target, "output": ns.outputs[12].pk},
    ]:
        assert c.post(gold_url, post, HTTP_HX_REQUEST="true").status_code == 400, post
    assert dict(GoldLabel.objects.values_list("output_id", "value")) == {ns.outputs[10].pk: 1, ns.outputs[11].pk: 0}
    ratings = c.get(reverse("agreement-export", args=[ns.study.pk]) + f"?table=ratings&target={target}")
    ratings = ratings.getvalue().decode()
    gold_rows = [r for r in csv.DictReader(io.StringIO(ratings)) if r["rater"] == "gold"]
    assert sorted((int(r["unit"]), r["value"]) for r in gold_rows) == [
        (ns.outputs[10].pk, "1"),
        (ns.outputs[11].pk, "0"),
    ]
    gold_csv = c.get(reverse("agreement-export", args=[ns.study.pk]) + "?table=gold").getvalue().decode()
    assert gold_csv.startswith("target,output_id,value,value_name,decided_by") and gold_csv.count("\n") == 3
    response = c.post(
        gold_url, {"target": target, "output": ns.outputs[10].pk, "value": "clear"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and GoldLabel.objects.count() == 1


def test_confusion_partial_and_csv_tables(coded_study, client_for):
    ns = coded_study
    c = client_for(ns.users["researcher"])
    sid = ns.study.pk
    x, y = "judge:model-x", "judge:model-y"
    html = c.get(
        reverse("agreement-confusion", args=[sid]) + f"?target=stereotype&a={x}&b={y}", HTTP_HX_REQUEST="true"
    ).content.decode()
    # model-x: 1 on 0-10; model-y: 1 on 0-8, 12, 13 → (1,1)=9, (1,0)=2, (0,1)=2, (0,0)=7
    cells = re.findall(r"<td>(\d+)</td>", html)
    assert cells == ["7", "2", "2", "9"]
    export = reverse("agreement-export", args=[sid])
    for query, header in [
        ("table=report&bootstrap=0", "target,kind,name"),
        ("table=coder_matrix", "coder_a,coder_b,n_units,kappa"),
        ("table=judge_human", "judge,human,n_units,kappa"),
        (f"table=pairs&target=code:{ns.charisma.pk}", "rater_a,rater_b"),
        (f"table=confusion&target=stereotype&a={x}&b={y}", "model-x \\ model-y,0,1"),
        (f"table=disagreements&target=code:{ns.charisma.pk}", "output_id,story,ann,bob,gold"),
    ]:
        response = c.get(f"{export}?{query}")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), query
        assert response.getvalue().decode().startswith(header), query


def test_api_table_versus_majority_and_gold(coded_study, api_for):
    ns = coded_study
    api = api_for(ns.users["researcher"])
    base = f"/api/studies/{ns.study.pk}/"
    body = api.get(base + "agreement/table/?target=stereotype&raters=judge:model-x,judge:model-y&bootstrap=100").json()
    assert body["result"]["n_raters"] == 2 and body["result"]["ci95"]["krippendorff_alpha"]
    assert body["raters"] == {"judge:model-x": "model-x", "judge:model-y": "model-y"}
    report = api.get(base + "agreement/?bootstrap=0").json()
    assert {row["name"] for row in report["codes"]} == {"M charisma in leadership", "F protected & sheltered"}
    assert report["judge_human"]["judges"] == ["model-x", "model-y"]
    vm = api.get(base + f"agreement/versus-majority/?target=code:{ns.charisma.pk}").json()
    assert [row["label"] for row in vm] == ["ann", "bob"]
    dis = api.get(base + f"agreement/disagreements/?target=code:{ns.charisma.pk}").json()
    assert dis["count"] == 4
    created = api.post(
        base + "gold-labels/", {"target": "stereotype", "output": ns.outputs[0].pk, "value": 1}, format="json"
    )
    assert created.status_code == 201 and created.json()["decided_by"] == "researcher"
    bad = api.post(
        base + "gold-labels/", {"target": "stereotype", "output": ns.outputs[0].pk, "value": 9}, format="json"
    )
    assert bad.status_code == 400 and "must be one of" in bad.json()["detail"]
    listed = api.get(base + "gold-labels/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert len(rows) == 1
    assert api.delete(base + f"gold-labels/{rows[0]['id']}/").status_code == 204


def test_end_to_end_report_alpha_equals_cli_on_exported_csv(coded_study, client_for, tmp_path):
    """Must show 3: two coders and two judges rate the same 20 stories; the page's alpha = the CLI's alpha."""
    ns = coded_study
    c = client_for(ns.users["researcher"])
    sid = ns.study.pk
    # the mixed panel: 2 judges + 2 coders on the same 20 stories
    target = "stereotype"
    html = c.get(reverse("agreement-table", args=[sid]) + f"?target={target}&bootstrap=0").content.decode()
    page_alpha = re.search(r'id="alpha-value">([^<]+)<', html).group(1)
    csv_text = c.get(reverse("agreement-export", args=[sid]) + f"?table=ratings&target={target}").getvalue().decode()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert len({r["unit"] for r in rows}) == 20 and len({r["rater"] for r in rows}) == 4
    path = tmp_path / "ratings.csv"
    path.write_text(csv_text)
    out = io.StringIO()
    call_command(
        "agreement", "--input", str(path), "--level", "nominal", "--format", "json", "--bootstrap", "0", stdout=out
    )
    cli = json.loads(out.getvalue())
    assert cli["n_units"] == 20 and cli["n_raters"] == 4 and cli["n_ratings"] == 80
    assert f"{cli['krippendorff_alpha']:.3f}" == page_alpha
    # the study report shows the same alpha for the mixed panel, and per code
    report_html = c.get(reverse("agreement", args=[sid]) + "?bootstrap=0").content.decode()
    panel = re.search(r"All judges and humans in one matrix</a>:\s*α = ([0-9.\-]+)", report_html).group(1)
    assert panel == f"{cli['krippendorff_alpha']:.3f}"
    row = re.search(r'data-target="code:%d">.*?class="num alpha">([^<\s]+)' % ns.charisma.pk, report_html, re.S).group(
        1
    )
    code_csv = c.get(reverse("agreement-export", args=[sid]) + f"?table=ratings&target=code:{ns.charisma.pk}")
    code_csv = code_csv.getvalue().decode()
    path.write_text(code_csv)
    out = io.StringIO()
    call_command("agreement", "--input", str(path), "--bootstrap", "0", stdout=out)
    assert f"{json.loads(out.getvalue())['krippendorff_alpha']:.3f}" == row


def test_command_from_study(coded_study):
    ns = coded_study
    out = io.StringIO()
    call_command(
        "agreement",
        "--study",
        str(ns.study.pk),
        "--raters",
        "judge:model-x,judge:model-y",
        "--bootstrap",
        "0",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert data["n_raters"] == 2 and data["n_units"] == 20
    out = io.StringIO()
    call_command(
        "agreement", "--study", str(ns.study.pk), "--code", str(ns.charisma.pk), "--bootstrap", "0", stdout=out
    )
    assert json.loads(out.getvalue())["n_raters"] == 2
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No study"):
        call_command("agreement", "--study", "999999")


def test_cached_report_follows_every_change(coded_study, client_for):
    from agreement import services
    from annotation.models import Coding

    ns = coded_study
    first = services.cached_study_report(ns.study, bootstrap=0)
    assert services.cached_study_report(ns.study, bootstrap=0) is not None
    alpha = {r["id"]: r["krippendorff_alpha"] for r in first["codes"]}[ns.charisma.pk]
    Coding.objects.create(output=ns.outputs[19], code=ns.charisma, coder=ns.coders["bob"], codebook=ns.codebook)
    second = services.cached_study_report(ns.study, bootstrap=0)
    assert {r["id"]: r["krippendorff_alpha"] for r in second["codes"]}[ns.charisma.pk] != alpha
    ns.protected.name = "F sheltered"
    ns.protected.save()
    third = services.cached_study_report(ns.study, bootstrap=0)
    assert "F sheltered" in {r["name"] for r in third["codes"]}
    services.set_gold(ns.study, target="stereotype", output_id=ns.outputs[0].pk, value=1, user=ns.users["researcher"])
    fourth = services.cached_study_report(ns.study, bootstrap=0)
    assert "gold" in fourth["judge_human"]["humans"]


def test_csv_downloads_escape_spreadsheet_formulas(coded_study, client_for):
    """Every agreement CSV goes through the one table writer: a judge or coder label that a spreadsheet would run
    as a formula arrives with a leading quote, in cells and in header cells alike."""
    from judging.models import Verdict

    ns = coded_study
    evil = '=HYPERLINK("http://evil.invalid")'
    for i, out in enumerate(ns.outputs):
        Verdict.objects.create(round=ns.round, output=out, judge_model=evil, value=int(i % 3 == 0), status="ok")
    ns.coders["bob"].username = "@bob"
    ns.coders["bob"].save()
    c = client_for(ns.users["researcher"])
    export = reverse("agreement-export", args=[ns.study.pk])
    judge_human = list(csv.reader(io.StringIO(c.get(f"{export}?table=judge_human").getvalue().decode())))
    assert "'" + evil in [row[0] for row in judge_human[1:]] and evil not in [row[0] for row in judge_human]
    pairs = c.get(f"{export}?table=pairs&target=code:{ns.charisma.pk}").getvalue().decode()
    pairs = list(csv.reader(io.StringIO(pairs)))
    assert sorted(pairs[1][:2]) == ["'@bob", "ann"]
    header = next(
        csv.reader(io.StringIO(c.get(f"{export}?table=disagreements&target=code:{ns.charisma.pk}").getvalue().decode()))
    )
    assert header[:2] == ["output_id", "story"] and sorted(header[2:4]) == ["'@bob", "ann"] and header[4] == "gold"
    confusion = c.get(f"{export}?table=confusion&target=stereotype&a=judge:{evil}&b=judge:model-x").getvalue().decode()
    assert confusion.startswith("\"'" + evil.replace('"', '""'))


def test_export_columns_stay_distinct_when_two_raters_share_a_label():
    from agreement.views import _unique_columns

    assert _unique_columns(["output_id", "ann", "ann", "ann (2)", 0]) == [
        "output_id",
        "ann",
        "ann (2)",
        "ann (2) (2)",
        "0",
    ]
