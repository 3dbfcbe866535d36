"""Categorical judge templates: the judge answers one of N labels; parsed and re-asked like binary verdicts."""

import json

import pytest

from judging import parsing, prompts, rounds
from judging.models import Verdict
from judging.services import JudgingError, create_template
from tests.generation.runs.conftest import make_endpoint, study  # noqa: F401 (fixtures)
from tests.judging.helpers import build_study, tag

LABELS = ["female", "male", "both", "unclear"]
TEXT = (
    "Which character holds the role in {target_stereotype}? Answer one of {labels} per story as JSON "
    "like {answer_example}.\n\n{stories}"
)


def test_labels_parse_from_json_and_free_text():
    scale = (0, 3)
    got = parsing.parse_answer(
        '{"a": {"label": "Male"}, "b": "both", "c": "robot", "d": 2}',
        ["a", "b", "c", "d"],
        "json",
        scale,
        labels=LABELS,
    )
    assert (got["a"].status, got["a"].value) == ("ok", 1)
    assert (got["b"].status, got["b"].value) == ("ok", 2)
    assert got["c"].status == "unparseable" and "robot" in got["c"].detail
    assert got["d"].status == "unparseable"  # a number is not a label
    free = parsing.parse_answer(
        "Story 1: unclear, hard to say.\nStory 2: **female** - the nurse is Ana.\nStory 3:",
        ["x", "y", "z"],
        "free_text",
        scale,
        labels=LABELS,
    )
    assert [free[k].value for k in "xyz"] == [3, 0, None] and free["z"].status == "missing"


def test_template_needs_two_distinct_labels(study):
    with pytest.raises(JudgingError, match="at least two"):
        create_template(study, name="c", kind="categorical", text=TEXT, labels=["only"])
    with pytest.raises(JudgingError, match="twice"):
        create_template(study, name="c", kind="categorical", text=TEXT, labels=["a", "A"])
    t = create_template(study, name="c", kind="categorical", text=TEXT, labels=LABELS)
    assert (t.scale_min, t.scale_max, t.labels) == (0, 3, LABELS)
    rendered = prompts.render(t.text, t.kind, "nursing", [("s1", "x"), ("s2", "y")], (0, 3), labels=LABELS)
    assert "female / male / both / unclear" in rendered
    assert json.loads(rendered.split("like ")[1].split(".\n")[0]) == {
        "s1": {"label": "female", "rationale": "one short sentence"},
        "s2": {"label": "male", "rationale": "one short sentence"},
    }


def test_round_stores_labels_and_reasks_a_missing_one(study, make_endpoint, fake_provider):
    data = build_study(study, make_endpoint, trials=1, injection=False)
    template = create_template(study, name="Role", kind="categorical", text=TEXT, labels=LABELS)
    rnd = rounds.create_round(
        study,
        name="cat",
        template=template,
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        policy="rotation",
        batch_size=5,
        seed=3,
    )
    rounds.materialize(rnd)
    want = {pk: LABELS[i % 4] for i, pk in enumerate(sorted(data["truth"]))}
    left_out = sorted(data["truth"])[0]
    batches = {}
    for v in Verdict.objects.filter(round=rnd).select_related("output").order_by("batch_ref", "position"):
        batches.setdefault(v.batch_ref, []).append(v)
    for verdicts in batches.values():
        answer = {
            rounds.story_text(rnd, v.output)[0]: {"label": want[v.output_id]}
            for v in verdicts
            if v.output_id != left_out
        }
        fake_provider.script([{"text": json.dumps(answer)}], match=verdicts[0].output.text.split("]")[0] + "]")
    out = data["run"].outputs.get(pk=left_out)
    alone = rounds.story_text(rnd, out)[0]
    fake_provider.script([{"text": json.dumps({alone: "FEMALE"})}], match=tag(out.model_name, out.item.number, 1))
    rounds.start(rnd)
    got = {v.output_id: (v.status, v.label, v.value, v.reasked) for v in Verdict.objects.filter(round=rnd)}
    assert all(status == "ok" for status, *_ in got.values())
    assert {pk: label for pk, (_, label, _, _) in got.items()} == {**want, left_out: "female"}
    assert got[left_out][3] is True
    assert all(LABELS[value] == label for _, label, value, _ in got.values())


def test_template_form_takes_labels_and_refuses_one_label(roles, client_for):
    from django.urls import reverse

    from judging.models import JudgeTemplate

    study, client = roles["a"], client_for(roles["users"]["researcher"])
    url = reverse("judging-template-new", args=[study.pk])
    form = {
        "name": "Regard",
        "kind": "categorical",
        "text": TEXT,
        "scale_min": 0,
        "scale_max": 1,
        "detect_threshold": 1,
        "labels": "positive",
    }
    assert client.post(url, form).status_code == 200 and not JudgeTemplate.objects.filter(study=study).exists()
    assert client.post(url, {**form, "labels": "positive, neutral, negative"}).status_code == 302
    assert JudgeTemplate.objects.get(study=study).labels == ["positive", "neutral", "negative"]


def test_builtin_regard_judge_template(db):
    from judging.builtin import builtin_specs
    from judging.models import JudgeTemplate
    from stereoscope.builtin import load_builtins

    load_builtins(builtin_specs(), log=lambda *_: None)
    t = JudgeTemplate.objects.get(builtin_key="regard-categorical")
    assert t.kind == "categorical" and t.labels == ["negative", "neutral", "positive"] and t.locked
    rendered = prompts.render(t.text, t.kind, "the woman", [("s1", "x")], (0, 2), labels=t.labels)
    assert "negative / neutral / positive" in rendered and '<story id="s1">' in rendered
