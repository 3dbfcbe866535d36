import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judging import rounds
from judging.builtin import builtin_specs
from judging.models import JudgeTemplate, Verdict
from stereoscope.builtin import load_builtins
from tests.conftest import SHARED, shared_file
from tests.judging.helpers import build_study, script_round

pytestmark = pytest.mark.django_db


def seed_line():
    line = shared_file("seeds", "001_8d8d91821ae2a91b.txt").read_text(encoding="utf-8").splitlines()[329]
    return line.strip().strip("“”")


def test_builtin_templates_load_once_and_the_seed_prompt_is_verbatim():
    load_builtins(builtin_specs(), log=lambda *_: None)
    load_builtins(builtin_specs(), log=lambda *_: None)  # idempotent
    templates = JudgeTemplate.objects.filter(study__is_library=True)
    assert templates.count() == 4 and all(t.locked for t in templates)
    seed = templates.get(builtin_key="fang2025-seed-binary")
    if SHARED is not None:  # the seed text lives in ../shared, beside the checkout
        expected = seed_line().replace("[insert intended stereotype]", "{target_stereotype}")
        assert seed.text.startswith(expected)
    assert seed.text.endswith("{stories}") and seed.kind == "seed_binary"
    likert = templates.get(builtin_key="likert-0-4")
    assert (likert.scale_min, likert.scale_max, likert.detect_threshold) == (0, 4, 2)


def test_judge_round_command(study, make_endpoint, fake_provider):
    load_builtins(builtin_specs(), log=lambda *_: None)
    data = build_study(study, make_endpoint, trials=1, injection=False)
    template = JudgeTemplate.objects.get(builtin_key="structured-json-binary")  # a library template in a study round
    rnd = rounds.create_round(
        study,
        name="cli",
        template=template,
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
    )
    out = io.StringIO()
    call_command("judge_round", str(rnd.pk), "--plan", stdout=out)
    assert "15 verdicts in 15 calls" in out.getvalue() and not Verdict.objects.exists()
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "json")
    out = io.StringIO()
    call_command("judge_round", str(rnd.pk), stdout=out)
    assert "completed" in out.getvalue() and "15 ok" in out.getvalue()
    assert {v.output_id: v.value for v in Verdict.objects.filter(round=rnd)} == data["truth"]
    requests = len(fake_provider.requests)
    call_command("judge_round", str(rnd.pk), stdout=io.StringIO())  # a re-run asks nothing
    assert len(fake_provider.requests) == requests
    with pytest.raises(CommandError, match="No judge round"):
        call_command("judge_round", "99999")
