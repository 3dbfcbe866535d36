import json

import pytest
from django.core.management import CommandError, call_command

from measures.models import MeasureRun

pytestmark = pytest.mark.django_db


def test_measure_command_creates_scores_and_reports(study, make_outputs, library_lexicons, capsys):
    make_outputs(
        study,
        [
            {"text": "Kelly is kind and warm. She helps.", "slot_values": {"name": "Kelly"}},
            {"text": "Joseph is a confident leader. He leads.", "slot_values": {"name": "Joseph"}},
        ],
    )
    jung = library_lexicons["jung2025-reference-letters"]
    call_command(
        "measure",
        "--study",
        str(study.pk),
        "--name",
        "cli",
        "--lexicon",
        str(jung.pk),
        "--classifier",
        "vader",
        "--sync",
    )
    run = MeasureRun.objects.get(name="cli")
    assert run.status == "completed" and run.output_measures.count() == 2
    assert "2 outputs scored" in capsys.readouterr().out
    call_command("measure", "--run", str(run.pk), "--report")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any(line["kind"] == "context_score" for line in lines)
    with pytest.raises(CommandError, match="No lexicon with id 999999"):
        call_command("measure", "--study", str(study.pk), "--lexicon", "999999")
    with pytest.raises(CommandError, match="at least one lexicon or a classifier"):
        call_command("measure", "--study", str(study.pk))
    with pytest.raises(CommandError, match="--study"):
        call_command("measure")
