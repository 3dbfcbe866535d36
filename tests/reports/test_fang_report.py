"""The study report of the built-in Fang recipe run on the fake provider: its seed Table 3 and weights equal the
judging API's values, and no NaN, inf or raw float noise is printed anywhere."""

import re

NOISE = re.compile(r"\b(nan|NaN|inf|Infinity)\b|(?<![\d:.])\d\.\d{5,}")  # raw floats: 0.123456...


def assert_clean(text):
    found = NOISE.search(text)
    assert not found, text[max(0, found.start() - 200) : found.end() + 50]


def test_fang_seed_table3_equals_the_api(fang_study, client, django_user_model):
    from judging.models import JudgeRound
    from reports import builder
    from reports.numbers import mean_sd
    from reports.render import html, markdown
    from stereoscope.services import add_member

    user = django_user_model.objects.create_user("reader")
    add_member(study=fang_study, username="reader", role="researcher", actor=None)
    client.force_login(user)
    rnd = JudgeRound.objects.get(study=fang_study)
    api = client.get(f"/api/studies/{fang_study.pk}/judge-rounds/{rnd.pk}/report/").json()
    doc = builder.build(fang_study)
    seed = next(s for s in doc.sections if s.key == "seed")
    assert "Fang, Y. (2025)" in seed.blocks[0]["text"]
    t3 = next(b for b in seed.blocks if b.get("key") == f"seed-table3-{rnd.pk}")
    models = api["table3"]["models"]
    assert t3["columns"] == ["Dimension", *models, "All models"]
    cells = {(c["dimension"], c["model"]): c for c in api["table3"]["cells"]}
    for row, values in zip(t3["rows"], t3["values"], strict=True):
        if row[0] == "Overall":
            continue
        for j, model in enumerate(models, start=1):
            cell = cells[(row[0], model)]
            assert values[j] == cell["mean"] and row[j] == mean_sd(cell["mean"], cell["sd"])
    overall = {o["model"]: o for o in api["table3"]["overall"]}
    assert t3["values"][-1][1:-1] == [overall[m]["mean"] for m in models]
    weights = next(b for b in seed.blocks if b.get("key") == f"seed-weights-{rnd.pk}")
    by_number = {i["item_number"]: i for i in api["items"]}
    assert len(weights["values"]) == len(by_number)
    for values in weights["values"]:
        item = by_number[values[0]]
        assert values[2] == item["n"] and values[3] == item["rate"] and values[5] == item["weight"]
    # Phase 1: one-sample t-tests against the midpoint, as the questionnaire report API gives them
    from psychometrics.models import QuestionnaireRun

    qrun = QuestionnaireRun.objects.get(study=fang_study)
    tests = client.get(f"/api/studies/{fang_study.pk}/questionnaire-runs/{qrun.pk}/report/").json()["group_tests"]
    phase1 = next(b for b in seed.blocks if b.get("key") == f"seed-phase1-{qrun.pk}")
    assert [v[2:] for v in phase1["values"]] == [
        [t["n"], t["mean"], t["t"], t["df"], t["p"], t["d"]] for t in tests["one_sample"]
    ]
    # Methods: every number from the database (3 prompts × 5 trials × 2 models for the phase 3 stories)
    methods = next(s for s in doc.sections if s.key == "methods")
    text = " ".join(b.get("text", "") for b in methods.blocks)
    assert "“Phase 3 stories” asked 3 prompts × 5 trials × 2 models" in text and "30 outputs were completed" in text
    assert "fake-writer-1" in str(methods.blocks)
    for rendered in (html(doc), markdown(doc)):
        assert_clean(rendered)
    assert "Table 3 of the seed" in html(doc)
