"""Assignments on a sample of N stories from one or more runs, stratified by model × prompt, with a seed: the
allocation rule, determinism, the preview (page and API) and bad input (a clear message, nothing saved)."""

import random
from fractions import Fraction

import pytest
from django.urls import reverse

from annotation import services
from annotation.assigning import AssignmentPlanError, allocate, sample_outputs
from annotation.models import Assignment, AssignmentPlan

# run 1: model-a × item 1: 8, model-a × item 2: 4, model-b × item 1: 6, model-b × item 2: 2; run 2: model-b × item 2: 10
RUN_1 = [("model-a", 0)] * 8 + [("model-a", 1)] * 4 + [("model-b", 0)] * 6 + [("model-b", 1)] * 2


@pytest.fixture
def sampled(roles, outputs_factory, small_codebook, make_toolkit, make_user):
    from stereoscope.models import Membership

    study = roles["a"]
    cb, _ = small_codebook(study)
    items = list(make_toolkit(study, n_items=2).items.order_by("number"))
    run_1 = outputs_factory(
        study,
        [f"Story {i}" for i in range(len(RUN_1))],
        model_names=[m for m, _ in RUN_1],
        items=[items[i] for _, i in RUN_1],
    )
    run_2 = outputs_factory(study, [f"Other {i}" for i in range(10)], ["model-b"] * 10, [items[1]] * 10)
    coders = [roles["users"]["coder"], make_user("coder2"), make_user("coder3")]
    for coder in coders[1:]:
        Membership.objects.create(study=study, user=coder, role="coder")
    return {
        "study": study,
        "cb": cb,
        "runs": [run_1[0].run, run_2[0].run],
        "coders": coders,
        "u": roles["users"],
    }


def test_allocation_is_proportional_with_largest_remainder():
    # quotas 1.5, 3, 10.5: the one story left goes to the larger of the two strata with remainder .5
    assert allocate({"A": 10, "B": 20, "C": 70}, 15) == {"A": 1, "B": 3, "C": 11}
    # quotas 3.6, 1.8, 2.7, 0.9: floors 3, 1, 2, 0 and the 3 left to the largest remainders .9, .8, .7
    assert allocate({"a1": 8, "a2": 4, "b1": 6, "b2": 2}, 9) == {"a1": 3, "a2": 2, "b1": 3, "b2": 1}
    # equal remainders and sizes: the first strata in order
    assert allocate({k: 6 for k in "abcdef"}, 15) == dict(zip("abcdef", [3, 3, 3, 2, 2, 2], strict=True))
    rng = random.Random(5)
    for _ in range(200):  # Hamilton's method satisfies quota: every stratum within one story of N · n_s / M
        sizes = {k: rng.randint(1, 40) for k in range(rng.randint(1, 8))}
        n = rng.randint(1, sum(sizes.values()))
        taken = allocate(sizes, n)
        total = sum(sizes.values())
        assert sum(taken.values()) == n
        assert all(abs(taken[k] - Fraction(n * sizes[k], total)) < 1 and taken[k] <= sizes[k] for k in sizes)
    for bad in (0, 31):
        with pytest.raises(AssignmentPlanError):
            allocate({"a": 10, "b": 20}, bad)


def test_a_sample_is_the_same_for_the_same_seed():
    rows = [(i, f"model-{i % 3}", i % 4) for i in range(120)]
    first, strata = sample_outputs(rows, 20, seed=7)
    assert first == sample_outputs(rows, 20, seed=7)[0]
    assert len(first) == 20 and [r[0] for r in first] == sorted(r[0] for r in first)  # in the given order
    assert sum(s[3] for s in strata) == 20 and len(strata) == 12
    assert any(sample_outputs(rows, 20, seed=seed)[0] != first for seed in range(8, 12))


def test_preview_then_create_a_sample_of_runs(sampled):
    s = sampled
    kwargs = {
        "outputs": services.outputs_of(s["study"]).filter(status="done"),
        "coders": s["coders"],
        "k": 2,
        "strategy": "random_balanced",
        "seed": 3,
        "sample_size": 9,
        "runs": s["runs"][:1],
    }
    plan = services.preview_assignments(s["study"], s["cb"], **kwargs)
    assert Assignment.objects.count() == 0 and AssignmentPlan.objects.count() == 0  # a preview writes nothing
    assert plan["available"] == 20 and len(plan["stories"]) == 9
    assert [(x["model"], x["item"], x["available"], x["sampled"]) for x in plan["sample"]["strata"]] == [
        ("model-a", 1, 8, 3),
        ("model-a", 2, 4, 2),
        ("model-b", 1, 6, 3),
        ("model-b", 2, 2, 1),
    ]
    assert sum(plan["per_coder"].values()) == 18
    made = services.create_assignments(s["study"], s["cb"], **kwargs)
    assert sorted({a.output_id for a in made}) == sorted(plan["stories"])
    assert [(a.output_id, a.coder_id) for a in made] == plan["pairs"]
    record = AssignmentPlan.objects.get()
    assert (record.sample_size, record.sample_seed, record.k, record.stories, record.assignments_made) == (
        9,
        3,
        2,
        9,
        18,
    )
    assert list(record.runs.all()) == s["runs"][:1] and record.coders.count() == 3
    # from two runs: the strata pool across them
    both = services.preview_assignments(s["study"], s["cb"], **{**kwargs, "runs": s["runs"], "sample_size": 15})
    assert both["available"] == 30 and len(both["stories"]) == 15 and len(both["run_ids"]) == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sample_size": 21}, "A sample of 21 stories needs at least 21 finished stories; the chosen runs have 20."),
        ({"sample_size": 0}, "The sample size must be at least 1"),
        ({"sample_size": "a few"}, "The sample size must be a whole number."),
        ({"runs": []}, "Choose one or more runs to sample the stories from."),
        ({"k": 4}, "An overlap of 4 needs at least 4 coders"),
        ({"seed": 2**40}, "The seed must be between -2,147,483,648 and 2,147,483,647."),
        ({"sample_seed": "x"}, "The sample seed must be a whole number."),
    ],
)
def test_bad_samples_say_what_is_wrong_and_save_nothing(sampled, change, message):
    s = sampled
    kwargs = {
        "outputs": services.outputs_of(s["study"]).filter(status="done"),
        "coders": s["coders"],
        "k": 2,
        "sample_size": 5,
        "runs": s["runs"][:1],
        **change,
    }
    with pytest.raises(services.AnnotationError) as exc:
        services.create_assignments(s["study"], s["cb"], **kwargs)
    assert message in str(exc.value)
    assert Assignment.objects.count() == 0 and AssignmentPlan.objects.count() == 0


def test_the_page_previews_the_plan_before_creating(sampled, client_for):
    s = sampled
    c = client_for(s["u"]["researcher"])
    url = reverse("annotation-assignments", args=[s["study"].pk, s["cb"].pk])
    form = {
        "coders": [u.pk for u in s["coders"]],
        "runs": [s["runs"][0].pk],
        "sample_size": "9",
        "k": "2",
        "strategy": "stratified",
        "seed": "3",
        "mode": "blind",
    }
    r = c.post(url, {**form, "op": "preview"})
    body = r.content.decode()
    assert r.status_code == 200 and Assignment.objects.count() == 0
    assert "9 of 20 stories from Run 1: a sample of 9, stratified by model × prompt, seed 3." in body
    assert "18 new assignments to 3 coders" in body and "Create these 18 assignments" in body
    assert 'id="plan-strata"' in body
    r = c.post(url, {**form, "op": "create"}, follow=True)
    assert "18 assignments created (9 stories)." in r.content.decode()
    assert Assignment.objects.filter(mode="blind").count() == 18
    r = c.post(url, {**form, "sample_size": "50", "op": "preview"}, follow=True)
    assert "A sample of 50 stories needs at least 50 finished stories; the chosen runs have 20." in r.content.decode()
    r = c.post(url, {**form, "runs": [], "op": "create"}, follow=True)
    assert "Choose one or more runs to sample the stories from." in r.content.decode()
    assert Assignment.objects.count() == 18 and AssignmentPlan.objects.count() == 1


def test_the_api_previews_and_creates_a_sample(sampled, api_for):
    s = sampled
    api = api_for(s["u"]["researcher"])
    url = f"/api/studies/{s['study'].pk}/assignments/plan/"
    body = {
        "codebook": s["cb"].pk,
        "coders": ["coder", "coder2", "coder3"],
        "k": 3,
        "strategy": "all",
        "seed": 1,
        "run_ids": [r.pk for r in s["runs"]],
        "sample_size": 15,
    }
    r = api.post(url, {**body, "preview": True}, format="json")
    assert r.status_code == 200, r.content
    preview = r.json()
    assert preview["available"] == 30 and len(preview["stories"]) == 15 and len(preview["assignments"]) == 45
    assert preview["sample"]["stratify"] == "model_item" and preview["per_coder"] == {
        "coder": 15,
        "coder2": 15,
        "coder3": 15,
    }
    assert Assignment.objects.count() == 0
    r = api.post(url, body, format="json")
    assert r.status_code == 201 and sorted({a["output"] for a in r.json()}) == sorted(preview["stories"])
    r = api.post(url, {**body, "sample_size": 31, "preview": True}, format="json")
    assert r.status_code == 400 and "the chosen runs have 30" in r.content.decode()
    r = api.post(url, {**body, "run_ids": [], "sample_size": 3}, format="json")
    assert r.status_code == 400 and "Choose one or more runs" in r.content.decode()
    assert Assignment.objects.count() == 45
