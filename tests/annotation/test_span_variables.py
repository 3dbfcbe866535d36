"""Span-level categorical variables (the regard study labels each sentence): sentence units formed from the coders'
spans, agreement equal to the reference libraries on a constructed dataset, the exclude rule, majority gold with
ties, contrasts by subject gender, overlap-matched segment units, the page and API with roles enforced, and blind
mode in every count a coder sees."""

import csv
import io
import json
import random
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from scipy.stats import chi2_contingency
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from agreement import contrasts, variables
from agreement.models import GoldLabel
from agreement.rating_tables import AgreementRequestError
from annotation import services as annotation
from annotation.models import Assignment
from stereoscope.datasets import datasets
from stereoscope.models import Membership
from stereoscope.tables import CSVTableWriter
from tests.agreement.test_regard_end_to_end import regard_study  # noqa: F401 (fixtures)
from tests.annotation.conftest import outputs_factory  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import make_endpoint  # noqa: F401 (fixtures: regard_study needs it)

pytestmark = pytest.mark.django_db

VALUES = ["negative", "neutral", "positive"]
SPAN_REGARD = {
    "name": "Sentence regard",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "span",
            "ordered": True,
            "children": [{"name": v} for v in VALUES] + [{"name": "uncertain", "exclude": True}],
        }
    ],
}
CLAUSES = [
    "{S} worked as a nurse in the city hospital",
    "{P} colleagues admired the care {s} gave",
    "{S} was often late for the morning shift",
    "Patients asked for {o} by name",
    "{S} never finished the paperwork",
    "{S} led the new training programme",
    "Nobody noticed when {s} left",
    "{S} spoke calmly to the frightened family",
]


def _story(rng, gender, n_sentences):
    """(text, [(start, end)] of each sentence) — offsets kept while the text is built, not found by a splitter."""
    words = {"S": "She", "s": "she", "P": "Her", "o": "her"} if gender == "woman" else {}
    words = words or {"S": "He", "s": "he", "P": "His", "o": "him"}
    text, bounds = "", []
    for i, clause in enumerate(rng.sample(CLAUSES, n_sentences)):
        if i:
            text += "\n" if i == 2 else " "  # a paragraph break inside some stories
        start = len(text)
        text += clause.format(**words) + "."
        bounds.append((start, len(text)))
    return text, bounds


@pytest.fixture
def span_study(roles, make_user, outputs_factory):
    study = roles["a"]
    rng = random.Random(1157)
    genders = ["woman" if i % 2 == 0 else "man" for i in range(14)]
    stories = [_story(rng, g, rng.randint(3, 5)) for g in genders]
    outputs = outputs_factory(study, [t for t, _ in stories], model_names=["m-a", "m-b"] * 7)
    for out, gender in zip(outputs, genders, strict=True):
        out.slot_values = {"gender": gender}
        out.save(update_fields=["slot_values"])
    codebook = annotation.import_codebook(study, SPAN_REGARD)
    value = {c.name: c for c in codebook.codes.filter(codable=True)}
    coders = []
    for n in range(4):
        coder = make_user(f"sent{n + 1}")
        Membership.objects.create(study=study, user=coder, role="coder")
        coders.append(coder)
    given = {}  # (output id, sentence number, coder) -> the label the coder meant
    relabelled = []
    for out, gender, (text, bounds) in zip(outputs, genders, stories, strict=True):
        weights = [1, 2, 4] if gender == "woman" else [4, 2, 1]
        truth = [rng.choices(VALUES, weights)[0] for _ in bounds]
        for coder in coders:
            Assignment.objects.create(study=study, codebook=codebook, output=out, coder=coder)
            labels = []
            for t in truth:
                label = t if rng.random() < 0.6 else rng.choice(VALUES)
                labels.append("uncertain" if rng.random() < 0.03 else label)
            i = 0
            while i < len(bounds):
                start, end = bounds[i]
                style = rng.choice(["exact", "no_stop", "spill", "merge", "phrase"])
                last = i
                if style == "merge" and i + 1 < len(bounds) and labels[i + 1] == labels[i]:
                    last, end = i + 1, bounds[i + 1][1]  # one span over two sentences with one label
                elif style == "no_stop":
                    end -= 1  # a sloppy selection without the full stop
                elif style == "spill":  # a few characters into both neighbours: labels this sentence only
                    start, end = max(0, start - 3), min(len(text), end + 3)
                elif style == "phrase":
                    start, end = start + 3, min(end, start + 3 + 12)  # a phrase inside the sentence
                for k in range(i, last + 1):
                    given[(out.pk, k + 1, coder.username)] = labels[k]
                annotation.create_coding(
                    study=study, codebook=codebook, output=out, code=value[labels[i]], coder=coder, start=start, end=end
                )
                i = last + 1
        # one coder changes their mind on the first sentence with a second, slightly different span: the later wins
        first_start, first_end = bounds[0]
        coder = coders[out.pk % 4]
        old = given[(out.pk, 1, coder.username)]
        if old != "uncertain":
            new = VALUES[(VALUES.index(old) + 1) % 3]
            annotation.create_coding(
                study=study,
                codebook=codebook,
                output=out,
                code=value[new],
                coder=coder,
                start=first_start,
                end=first_end - 1 if first_end - 1 > first_start else first_end,
            )
            given[(out.pk, 1, coder.username)] = new
            relabelled.append((out.pk, coder.username))
    return {
        "study": study,
        "codebook": codebook,
        "variable": codebook.codes.get(name="Regard"),
        "value": value,
        "outputs": outputs,
        "genders": dict(zip([o.pk for o in outputs], genders, strict=True)),
        "bounds": {o.pk: b for o, (_, b) in zip(outputs, stories, strict=True)},
        "given": given,
        "coders": coders,
        "relabelled": relabelled,
        "roles": roles,
    }


def _unit(out, n):
    return f"{out}:s{n}"


def _expected(s):
    """Kept units, dropped units and the complete rater × unit table, from what the fixture meant."""
    by_unit = {}
    for (out, n, coder), label in s["given"].items():
        by_unit.setdefault(_unit(out, n), {})[f"coder:{coder}"] = label
    dropped = {u for u, labels in by_unit.items() if "uncertain" in labels.values()}
    kept = sorted(set(by_unit) - dropped)
    raters = sorted({r for labels in by_unit.values() for r in labels})
    return by_unit, kept, dropped, raters


def test_sentence_units_agree_with_the_reference_libraries(span_study, tmp_path):
    s = span_study
    study, variable = s["study"], s["variable"]
    by_unit, kept, dropped, raters = _expected(s)
    n_sentences = sum(len(b) for b in s["bounds"].values())
    assert dropped and len(by_unit) == n_sentences and s["relabelled"]

    report = variables.variable_report(study, variable)
    assert report["unit_kind"] == "sentence"
    assert report["n_units_rated"] == n_sentences
    assert set(report["excluded_units"]) == dropped and report["n_excluded"] == len(dropped)
    assert report["n_units"] == len(kept) == n_sentences - len(dropped)
    assert {(u, r): v for u, r, v in report["ratings"]} == {(u, r): v for u in kept for r, v in by_unit[u].items()}, (
        "each coder's label reaches the sentences their spans cover, and only those"
    )
    # the unit's text is the sentence, from the story's own offsets
    out, n = map(int, kept[0].replace(":s", " ").split())
    start, end = s["bounds"][out][n - 1]
    info = report["unit_info"][kept[0]]
    assert (info["output_id"], info["sentence"], info["start"], info["end"]) == (out, n, start, end)

    position = {v: i for i, v in enumerate(VALUES)}
    matrix = np.array([[position[by_unit[u][r]] for u in kept] for r in raters], dtype=float)
    nominal, ordinal = report["levels"]["nominal"], report["levels"]["ordinal"]
    assert nominal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-9
    )
    assert ordinal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal"), abs=1e-9
    )
    counts, _ = aggregate_raters(matrix.T.astype(int))
    assert nominal.fleiss_kappa == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=1e-9)
    pairwise = [cohen_kappa_score(matrix[a], matrix[b]) for a, b in combinations(range(len(raters)), 2)]
    assert nominal.cohen_kappa_mean == pytest.approx(float(np.mean(pairwise)), abs=1e-9)
    full = np.mean([len(set(matrix[:, k])) == 1 for k in range(matrix.shape[1])])
    assert report["full_agreement"] == pytest.approx(full) and report["n_pairable"] == len(kept)

    # the export feeds the CLI the same figures
    dataset = datasets()["variable_ratings"]
    buffer = io.StringIO()
    writer = CSVTableWriter(buffer, dataset.column_names)
    for row in dataset.rows(study, {}):
        writer.write(row)
    rows = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert {r["unit"] for r in rows} == set(kept) and "uncertain" not in {r["value"] for r in rows}
    path = tmp_path / "sentences.csv"
    path.write_text(buffer.getvalue(), encoding="utf-8")
    out_json = io.StringIO()
    call_command("agreement", "--input", str(path), "--level", "nominal", "--bootstrap", "0", stdout=out_json)
    cli = json.loads(out_json.getvalue())
    for name in ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "percent_agreement"):
        assert cli[name] == pytest.approx(getattr(nominal, name), abs=1e-12), name


def test_majority_gold_ties_adjudication_and_the_gender_contrast(span_study):
    s = span_study
    study, variable = s["study"], s["variable"]
    by_unit, kept, _, _ = _expected(s)
    report = variables.variable_report(study, variable)
    gold = {g["unit"]: g for g in report["gold"]}
    assert sorted(gold) == kept
    ties, undecided = [], []
    for unit in kept:
        votes = list(by_unit[unit].values())
        top = max(votes.count(v) for v in set(votes))
        leaders = [v for v in set(votes) if votes.count(v) == top]
        assert gold[unit]["tie"] == (len(leaders) > 1), unit
        # strict majority (more than half) of at least two raters, the default rule
        strict = len(leaders) == 1 and 2 * top > len(votes) and len(votes) >= 2
        assert gold[unit]["gold"] == (leaders[0] if strict else None), unit
        assert gold[unit]["n_ratings"] == len(votes) and gold[unit]["share"] == pytest.approx(top / len(votes))
        assert gold[unit]["output_id"] == int(unit.split(":")[0])
        if len(leaders) > 1:
            ties.append(unit)
        if not strict:
            undecided.append(unit)
    assert ties and report["n_ties"] == len(ties) and report["n_undecided"] == len(undecided)

    variables.set_variable_gold(study, variable, unit=ties[0], value="neutral", user=s["roles"]["users"]["researcher"])
    stored = GoldLabel.objects.get(study=study, target__startswith=f"variable:{variable.pk}:")
    assert stored.output_id == int(ties[0].split(":")[0])
    again = {g["unit"]: g for g in variables.variable_report(study, variable)["gold"]}
    assert again[ties[0]]["gold"] == "neutral" and again[ties[0]]["tie"]
    assert all(again[u]["gold"] is None for u in ties[1:])
    with pytest.raises(AgreementRequestError, match="No sentence"):
        variables.set_variable_gold(study, variable, unit=f"{s['outputs'][0].pk}:s99", value="neutral", user=None)
    with pytest.raises(AgreementRequestError, match="unit"):
        variables.set_variable_gold(study, variable, unit="nonsense", value="neutral", user=None)

    final = variables.gold_labels(study, variable)
    assert set(final) == (set(kept) - set(undecided)) | {ties[0]}
    result = contrasts.label_contrast(study, variable, source="gold", by="gender")["contrast"]
    position = {v: i for i, v in enumerate(VALUES)}
    table = np.zeros((2, 3), dtype=int)
    for unit, label in final.items():
        table[0 if s["genders"][int(unit.split(":")[0])] == "woman" else 1, position[label]] += 1
    assert result.table == table.tolist() and result.n == len(final)
    stat, p, df, _ = chi2_contingency(table, correction=False)
    assert (result.chi2, result.df, result.p_value) == (pytest.approx(stat), df, pytest.approx(p))
    assert result.cramers_v == pytest.approx(np.sqrt(stat / table.sum()))
    by_model = contrasts.counts_by_model(study, variable)
    assert by_model["n"] == len(final) and by_model["unit_noun"] == "sentences"


def test_exclude_value_on_a_multi_sentence_span_drops_every_sentence_it_covers(roles, make_user, outputs_factory):
    study = roles["a"]
    text = "Anna fixed the server. She stayed late. Everyone thanked her."
    out = outputs_factory(study, [text])[0]
    codebook = annotation.import_codebook(study, SPAN_REGARD)
    value = {c.name: c for c in codebook.codes.filter(codable=True)}
    a, b = make_user("ann_a"), make_user("ann_b")
    for user in (a, b):
        Membership.objects.create(study=study, user=user, role="coder")
        Assignment.objects.create(study=study, codebook=codebook, output=out, coder=user)
    second = text.index("She")
    for user, code, start, end in [
        (a, "positive", 0, len(text)),  # one span over all three sentences
        (b, "positive", 0, second - 1),
        (b, "uncertain", second, len(text)),  # uncertain on sentences 2 and 3
    ]:
        annotation.create_coding(
            study=study, codebook=codebook, output=out, code=value[code], coder=user, start=start, end=end
        )
    report = variables.variable_report(study, codebook.codes.get(name="Regard"))
    assert report["n_units_rated"] == 3
    assert report["excluded_units"] == [f"{out.pk}:s2", f"{out.pk}:s3"] and report["n_units"] == 1
    assert report["gold"] == [
        {
            "unit": f"{out.pk}:s1",
            "output_id": out.pk,
            "majority": "positive",
            "tie": False,
            "undecided": False,
            "reason": "",
            "n_ratings": 2,
            "share": 1.0,
            "counts": {"positive": 2},
            "adjudicated": None,
            "gold": "positive",
            **{k: report["unit_info"][f"{out.pk}:s1"][k] for k in ("sentence", "start", "end", "text")},
        }
    ]
    assert report["unit_info"][f"{out.pk}:s1"]["text"] == "Anna fixed the server."


def test_segment_units_match_spans_by_overlap(roles, make_user, outputs_factory):
    """units=segment: spans of different coders overlapping by at least the share (intersection / union) are one
    unit; a coder's later span in a unit wins; a span nobody else matched is a unit with one rating."""
    study = roles["a"]
    text = "Anna led the team with quiet confidence and fixed every bug before the release."
    out = outputs_factory(study, [text])[0]
    codebook = annotation.import_codebook(study, SPAN_REGARD)
    value = {c.name: c for c in codebook.codes.filter(codable=True)}
    users = [make_user(f"seg{i}") for i in range(3)]
    for user in users:
        Membership.objects.create(study=study, user=user, role="coder")
        Assignment.objects.create(study=study, codebook=codebook, output=out, coder=user)
    spans = [
        (users[0], "positive", 0, 39),
        (users[1], "positive", 2, 39),  # 37/39 of users[0]'s span
        (users[2], "neutral", 0, 30),  # 30/39
        (users[0], "negative", 44, 63),  # alone
        (users[1], "neutral", 44, 60),
        (users[1], "negative", 45, 63),  # later span of the same coder in the same unit: wins
    ]
    for user, code, start, end in spans:
        annotation.create_coding(
            study=study, codebook=codebook, output=out, code=value[code], coder=user, start=start, end=end
        )
    variable = codebook.codes.get(name="Regard")
    report = variables.variable_report(study, variable, span_units="segment", min_overlap=0.5)
    first, second = f"{out.pk}:0-39", f"{out.pk}:44-63"
    assert {(u, r): v for u, r, v in report["ratings"]} == {
        (first, "coder:seg0"): "positive",
        (first, "coder:seg1"): "positive",
        (first, "coder:seg2"): "neutral",
        (second, "coder:seg0"): "negative",
        (second, "coder:seg1"): "negative",
    }
    assert report["full_agreement"] == pytest.approx(0.5) and report["n_pairable"] == 2
    strict = variables.variable_report(study, variable, span_units="segment", min_overlap=0.9)
    assert len({u for u, _, _ in strict["ratings"]}) > 2  # stricter matching splits the units
    with pytest.raises(AgreementRequestError, match="sentence or segment"):
        variables.variable_report(study, variable, span_units="paragraph")
    with pytest.raises(AgreementRequestError, match="overlap"):
        variables.variable_report(study, variable, span_units="segment", min_overlap=0)


def test_variable_page_and_api_for_span_units(span_study, client_for, api_for):
    s = span_study
    study, variable = s["study"], s["variable"]
    researcher, coder = s["roles"]["users"]["researcher"], s["roles"]["users"]["coder"]
    url = reverse("agreement-variable", args=[study.pk, variable.pk])
    assert client_for(coder).get(url).status_code == 403
    assert client_for(s["coders"][0]).get(url).status_code == 403
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    report = variables.variable_report(study, variable)
    html = page.content.decode()
    assert f'<strong id="n-excluded">{report["n_excluded"]}</strong>' in html and "sentences in the table" in html
    tie = next(g for g in report["gold"] if g["tie"])
    assert f'value="{tie["unit"]}"' in html and tie["text"] in html
    assert client_for(researcher).get(url, {"units": "segment", "overlap": "0.6"}).status_code == 200
    assert client_for(researcher).get(url, {"units": "words"}).status_code == 400
    assert client_for(researcher).get(url, {"units": "segment", "overlap": "lots"}).status_code == 400
    gold_url = reverse("agreement-variable-gold", args=[study.pk, variable.pk])
    assert client_for(coder).post(gold_url, {"unit": tie["unit"], "value": "neutral"}).status_code == 403
    assert client_for(researcher).post(gold_url, {"unit": "1:s", "value": "neutral"}).status_code == 400
    done = client_for(researcher).post(gold_url, {"unit": tie["unit"], "value": "neutral"})
    assert done.status_code == 302
    assert {g["unit"]: g["gold"] for g in variables.variable_report(study, variable)["gold"]}[tie["unit"]] == "neutral"

    api = f"/api/studies/{study.pk}/agreement/variable/"
    assert api_for(coder).get(api, {"variable": variable.pk}).status_code == 403
    body = api_for(researcher).get(api, {"variable": variable.pk}).json()
    assert body["unit_kind"] == "sentence" and body["n_units"] == report["n_units"]
    assert set(body["excluded_units"]) == set(report["excluded_units"])
    assert body["levels"]["nominal"]["krippendorff_alpha"] == pytest.approx(
        report["levels"]["nominal"].krippendorff_alpha
    )
    assert {g["unit"] for g in body["gold"]} == {g["unit"] for g in report["gold"]}
    segment = api_for(researcher).get(api, {"variable": variable.pk, "units": "segment", "overlap": "0.5"})
    assert segment.status_code == 200 and segment.json()["unit_kind"] == "segment"
    assert api_for(researcher).get(api, {"variable": variable.pk, "units": "x"}).status_code == 400


def test_blind_mode_hides_other_coders_spans_in_every_count(roles, make_user, outputs_factory, client_for, api_for):
    study = roles["a"]
    coder, other = roles["users"]["coder"], make_user("other_rater")
    Membership.objects.create(study=study, user=other, role="coder")
    text = "Anna fixed the server. She stayed late. Everyone thanked her."
    out = outputs_factory(study, [text])[0]
    codebook = annotation.import_codebook(study, SPAN_REGARD)
    value = {c.name: c for c in codebook.codes.filter(codable=True)}
    for user in (coder, other):
        Assignment.objects.create(study=study, codebook=codebook, output=out, coder=user)
    annotation.create_coding(
        study=study, codebook=codebook, output=out, code=value["positive"], coder=coder, start=0, end=22
    )
    for start, end, code in [(0, 22, "negative"), (23, 38, "negative"), (39, len(text), "neutral")]:
        annotation.create_coding(
            study=study, codebook=codebook, output=out, code=value[code], coder=other, start=start, end=end
        )
    c = client_for(coder)
    home = c.get(reverse("coding", args=[study.pk]))
    assert [cb.n_codings for cb in home.context["codebooks"] if cb.pk == codebook.pk] == [1]
    book = c.get(reverse("annotation-codebook", args=[study.pk, codebook.pk]))
    counts = {code.name: code.n_codings for code in book.context["flat"] if code.codable}
    assert counts == {"negative": 0, "neutral": 0, "positive": 1, "uncertain": 0}
    freq = c.get(reverse("annotation-frequencies", args=[study.pk, codebook.pk]) + "?by=coder&file_format=csv")
    assert "other_rater" not in freq.content.decode()
    api = api_for(coder).get(f"/api/studies/{study.pk}/codebooks/{codebook.pk}/frequencies/?by=coder").json()
    assert api["total"] == 1 and api["columns"] == ["coder"]
    codings = api_for(coder).get(f"/api/studies/{study.pk}/codings/").json()
    listed = codings["results"] if isinstance(codings, dict) else codings
    assert len(listed) == 1
    workspace = c.get(reverse("annotation-workspace", args=[study.pk, codebook.pk, out.pk]))
    assert workspace.status_code == 200
    assert {x.coder_id for x in workspace.context["codings"]} == {coder.pk}
    variable = codebook.codes.get(name="Regard")
    assert c.get(reverse("agreement-variable", args=[study.pk, variable.pk])).status_code == 403
    assert (
        api_for(coder).get(f"/api/studies/{study.pk}/agreement/variable/", {"variable": variable.pk}).status_code == 403
    )
    # the researcher's page counts both coders
    report = variables.variable_report(study, variable)
    assert report["raters"] == ["coder:coder", "coder:other_rater"] and report["n_units_rated"] == 3


def test_a_classifier_trains_on_the_sentences_gold_labels(span_study):
    from measures import trained

    s = span_study
    study, variable = s["study"], s["variable"]
    final = variables.gold_labels(study, variable)
    examples = trained.gold_examples(study, variable)
    assert [u for u, _, _ in examples] == sorted(final, key=variables.unit_sort_key)
    texts = {o.pk: o.text for o in s["outputs"]}
    for unit, label, text in examples:
        out, n = (int(x) for x in unit.split(":s"))
        start, end = s["bounds"][out][n - 1]
        assert label == final[unit] and text == texts[out][start:end]
    clf = trained.train_classifier(study, variable, name="sentence regard", k=3, seed=1, features="tfidf")
    assert [u for u, _ in clf.training_data] == [u for u, _, _ in examples]
    assert clf.metrics["n"] == len(examples)


def test_judges_join_sentence_units_only_on_one_sentence_stories(regard_study):
    """The regard fixture's stories are one sentence each, judged by two LLM judges: on a span-level variable the
    judges' story labels are the sentence's; a judged story of two sentences is left out of the judges' ratings."""
    s = regard_study
    study, outputs = s["study"], s["outputs"]
    two = outputs[-1]
    two.text = "She was kind. She was late."
    two.save(update_fields=["text"])
    codebook = annotation.import_codebook(study, SPAN_REGARD)
    value = {c.name: c for c in codebook.codes.filter(codable=True)}
    coder = s["coders"][0]
    for out in outputs[:10]:
        Assignment.objects.create(study=study, codebook=codebook, output=out, coder=coder)
        label = s["given"][(out.pk, coder.username)]
        annotation.create_coding(
            study=study, codebook=codebook, output=out, code=value[label], coder=coder, start=0, end=len(out.text)
        )
    variable = codebook.codes.get(name="Regard")
    report = variables.variable_report(study, variable)
    judged = {(u, r): v for u, r, v in report["ratings"] if r.startswith("judge:")}
    expected = {
        (f"{out.pk}:s1", f"judge:{model}"): label
        for (pk, model), label in s["judges"].items()
        for out in outputs
        if out.pk == pk and out.pk != two.pk
    }
    dropped = {u for u in report["excluded_units"]}
    assert judged == {k: v for k, v in expected.items() if k[0] not in dropped}
    assert not any(u.startswith(f"{two.pk}:") for u, _ in judged)
    assert any("1 judged story with more than one sentence" in note for note in report["notes"])
    assert report["n_units_rated"] == len(outputs) - 1
    segment = variables.variable_report(study, variable, span_units="segment")
    assert not any(r.startswith("judge:") for _, r, _ in segment["ratings"])
    assert any("left out of segment units" in note for note in segment["notes"])
