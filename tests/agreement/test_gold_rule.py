"""Issue 34, item 5: a variable's gold label is a strict majority (default) or a plurality, of at least
`gold_min_raters` coders (default 2); the page and the API show each unit's n raters and share agreeing, and the
rule is set per variable (page form, codebook file)."""

import re

import pytest

from agreement import variables
from annotation import services
from annotation.models import Assignment
from stereoscope.models import Membership
from tests.annotation.conftest import outputs_factory  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import study  # noqa: F401 (fixtures)
from tests.measures.test_trained_classifier import REGARD

pytestmark = pytest.mark.django_db

# story -> labels of coders c1..c4 (None = not rated)
VOTES = [
    ("positive", "positive", "negative", "neutral"),  # 2 of 4: plurality only
    ("positive", "positive", "negative", None),  # 2 of 3: strict majority
    ("negative", None, None, None),  # one rater
    ("positive", "positive", "negative", "negative"),  # tie
]


@pytest.fixture
def rated(roles, make_user, outputs_factory):
    study = roles["a"]
    codebook = services.import_codebook(study, REGARD)
    values = {c.name: c for c in codebook.codes.filter(codable=True)}
    outputs = outputs_factory(study, [f"Story {i}." for i in range(len(VOTES))])
    coders = [make_user(f"c{i}") for i in range(1, 5)]
    for user in coders:
        Membership.objects.create(study=study, user=user, role="coder")
    for out, votes in zip(outputs, VOTES, strict=True):
        for user, label in zip(coders, votes, strict=True):
            if label:
                Assignment.objects.create(study=study, codebook=codebook, output=out, coder=user)
                services.create_coding(study=study, codebook=codebook, output=out, code=values[label], coder=user)
    return {"study": study, "variable": codebook.codes.get(name="Regard"), "outputs": outputs, "roles": roles}


def _gold(study, variable):
    return [
        (g["gold"], g["n_ratings"], round(g["share"], 3), g["reason"])
        for g in variables.variable_report(study, variable)["gold"]
    ]


def test_strict_majority_by_default_plurality_and_minimum_raters_by_choice(rated):
    study, variable = rated["study"], rated["variable"]
    assert (variable.gold_rule, variable.gold_min_raters) == ("majority", 2)
    assert _gold(study, variable) == [
        (None, 4, 0.5, "no strict majority (2 of 4)"),
        ("positive", 3, 0.667, ""),
        (None, 1, 1.0, "fewer than 2 raters (1)"),
        (None, 4, 0.5, "tie"),
    ]
    services.update_code(variable, gold_rule="plurality", gold_min_raters=1)
    variable.refresh_from_db()
    assert [g[0] for g in _gold(study, variable)] == ["positive", "positive", "negative", None]
    with pytest.raises(services.AnnotationError):
        services.update_code(variable, gold_rule="most")
    # the codebook file carries the rule
    tree = services.codebook_tree(variable.codebook)
    assert tree["codes"][0]["gold_rule"] == "plurality" and tree["codes"][0]["gold_min_raters"] == 1


def test_page_and_api_show_raters_share_and_set_the_rule(rated, client_for, api_for):
    study, variable = rated["study"], rated["variable"]
    researcher = rated["roles"]["users"]["researcher"]
    web = client_for(researcher)
    url = f"/studies/{study.pk}/agreement/variables/{variable.pk}/"
    html = web.get(url + "?show=all").content.decode()
    assert "strict majority of coders, at least 2 raters" in html
    cells = re.findall(r'<td class="num n-raters">(\d+)</td><td class="num share">([\d.]+)</td>', html)
    assert cells == [("4", "0.50"), ("3", "0.67"), ("1", "1.00"), ("4", "0.50")]
    assert "no strict majority (2 of 4)" in html and "fewer than 2 raters (1)" in html
    assert re.search(r'id="n-undecided">3<', html)
    api = api_for(researcher).get(f"/api/studies/{study.pk}/agreement/variable/?variable={variable.pk}").json()
    assert api["gold_rule"]["rule"] == "majority" and api["variable"]["gold_min_raters"] == 2
    assert [(g["gold"], g["n_ratings"], g["reason"]) for g in api["gold"]][:2] == [
        (None, 4, "no strict majority (2 of 4)"),
        ("positive", 3, ""),
    ]
    r = web.post(url + "gold-rule/", {"gold_rule": "plurality", "gold_min_raters": "2"})
    assert r.status_code == 302
    variable.refresh_from_db()
    assert variable.gold_rule == "plurality"
    bad = web.post(url + "gold-rule/", {"gold_rule": "plurality", "gold_min_raters": "zero"})
    assert bad.status_code == 400 and "minimum number of raters" in bad.content.decode()
    variable.refresh_from_db()
    assert variable.gold_min_raters == 2
