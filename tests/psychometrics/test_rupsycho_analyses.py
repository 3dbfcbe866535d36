"""R.U.Psycho's analyses inside the product: persona attributes exported and compared (Welch t / ANOVA with effect
sizes), the rendered prompt exported per response, and the prompt-variant table (invalid / refused / inconclusive)."""
import json

import pytest
from scipy import stats

from psychometrics import reports, runs, services
from psychometrics.datasets import response_rows
from psychometrics.models import Response

from .helpers import load_library, script_asi

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(study, make_endpoint, fake_provider):
    asi, personas = load_library()
    ctx = services.contexts_from_personas(study, "personas", personas, n=16, seed=3)
    endpoint = make_endpoint(study, name="fake-gpt", model_id="fake-gpt", default_params={"temperature": 0})
    script_asi(fake_provider, asi, per_item=16, refusal_every=7)
    run = runs.create_run(study, name="ASI", instrument=asi, context_set=ctx, endpoints=[endpoint],
                          template_key="jung2025", extractors=["number"], audit_per_model=0)
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    return run


def test_rendered_prompt_and_attributes_exported(finished):
    rows = list(response_rows(finished.study, {"run_ids": [finished.pk]}))
    sent = {r.pk: r.messages for r in Response.objects.filter(run=finished)}
    assert rows and all(json.loads(row["messages"]) in sent.values() for row in rows)
    first = rows[0]
    context = finished.context_set.contexts.get(key=first["context"])
    assert json.loads(first["context_attributes"]) == context.attributes and context.attributes


def test_scores_compared_across_each_persona_attribute(finished):
    report = reports.run_report(finished, cfa=False)
    tests = report["attribute_tests"]
    assert tests, "personas carry attributes (title, surname group): each is compared"
    row = next(t for t in tests if t["score"] == "total" and t["attribute"] == "title")
    # recompute from the exported per-context scores
    scores = [s for s in reports.scores_table(finished) if s["model"] == row["endpoint"]]
    attrs = {c.key: c.attributes for c in finished.context_set.contexts.all()}
    groups = {}
    for s in scores:
        groups.setdefault(str(attrs[s["context"]].get(row["attribute"])), []).append(s["total"])
    groups = {k: [v for v in vals if v is not None] for k, vals in groups.items()}
    if len(groups) == 2:
        a, b = groups.values()
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert row["test"] == "Welch t" and row["t"] == pytest.approx(ref.statistic) and row["p"] == pytest.approx(ref.pvalue)
    else:
        ref = stats.f_oneway(*groups.values())
        assert row["test"] == "one-way ANOVA" and row["F"] == pytest.approx(ref.statistic)


def test_prompt_variant_table(finished, make_endpoint, fake_provider):
    table = reports.prompt_variant_table(finished.study)
    row = next(r for r in table if r["template"] == "jung2025")
    counts = {s: finished.responses.filter(extraction=s).count() for s in ("refused", "inconclusive", "not_present")}
    n = finished.responses.exclude(status="pending").count()
    assert row["n"] == n and row["refused"] == pytest.approx(counts["refused"] / n)
    assert row["invalid"] == pytest.approx(counts["not_present"] / n)
    assert row["inconclusive"] == pytest.approx(counts["inconclusive"] / n)


def test_pages_show_attribute_tests_and_variants(finished, client_for, django_user_model):
    from stereoscope.models import Membership, Role

    user = django_user_model.objects.create_user("res", password="x")
    Membership.objects.create(study=finished.study, user=user, role=Role.RESEARCHER)
    c = client_for(user)
    report = c.get(f"/studies/{finished.study.pk}/questionnaires/runs/{finished.pk}/report/").content.decode()
    assert 'id="attribute-tests"' in report and "<td>title</td>" in report
    compare = c.get(f"/studies/{finished.study.pk}/questionnaires/runs/compare/").content.decode()
    assert 'id="prompt-variants"' in compare and "<td>jung2025</td>" in compare
