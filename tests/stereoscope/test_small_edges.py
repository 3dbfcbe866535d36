"""Smaller rough edges: 0-rate bars, dashboard plurals, favicon, elapsed time, Presented as, discovery page."""

import pytest
from django.template.loader import render_to_string

from judging.reports import bars
from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401 (fixtures)


def _row(number, rate, flags=()):
    return {
        "item_number": number,
        "rate": rate,
        "ci_low": 0.0,
        "ci_high": min(1.0, rate + 0.2),
        "n": 25,
        "flags": list(flags),
    }


def test_zero_rate_prompt_gets_a_visible_marker():
    chart = bars([_row(1, 0.0, ["weak"]), _row(2, 0.5)])
    zero, half = chart["bars"]
    assert zero["zero"] and zero["w"] >= 3 and not half["zero"] and half["w"] == 210
    svg = render_to_string("judging/_report_body.html", {"bars": chart, "report": {"rows": [1], "table3": {}}})
    assert svg.count('class="zero-marker"') == 1 and 'class="zero-label">0</text>' in svg


@pytest.mark.django_db
def test_dashboard_plurals(roles, client_for):
    from stereoscope.dashboard import plural

    html = client_for(roles["users"]["researcher"]).get(f"/studies/{roles['a'].pk}/").content.decode()
    assert "discoverys" not in html and "code discoveries" in html
    assert [
        plural("code discovery", "code discoverys"),
        plural("day", "days"),
        plural("output", "outputs"),
        plural("lexicon category", "lexicon categories"),
    ] == ["code discoveries", "days", "outputs", "lexicon categories"]


@pytest.mark.django_db
def test_favicon_linked_and_served(roles, client_for):
    import re

    from django.contrib.staticfiles import finders

    html = client_for(roles["users"]["coder"]).get("/studies/").content.decode()
    href = re.search(r'<link rel="icon"[^>]*href="([^"]+)"', html).group(1)
    assert href.endswith("stereoscope/favicon.svg")
    assert "<svg" in open(finders.find("stereoscope/favicon.svg")).read()


@pytest.mark.django_db
def test_presented_as_shows_nothing_chosen_before_saving(roles, client_for, outputs_factory, small_codebook):
    import re

    from annotation import services

    study = roles["a"]
    codebook, _ = small_codebook(study)
    (story,) = outputs_factory(study, ["A story about Sam."])
    client = client_for(roles["users"]["researcher"])
    url = f"/studies/{study.pk}/coding/codebooks/{codebook.pk}/stories/{story.pk}/"

    def selected():
        html = client.get(url).content.decode()
        select = re.search(r'<select name="gender"[^>]*>(.*?)</select>', html, re.S).group(1)
        return re.findall(r'<option value="([^"]*)"[^>]*\bselected\b', select)

    assert selected() == [""]
    services.set_gender_attribution(story, coder=roles["users"]["researcher"], gender="M")
    assert selected() == ["M"]


@pytest.mark.django_db
def test_finished_run_shows_elapsed_time(roles, client_for):
    from datetime import timedelta

    from django.utils import timezone

    from generation.models import GenerationRun

    study = roles["a"]
    start = timezone.now() - timedelta(hours=2)
    run = GenerationRun.objects.create(
        study=study,
        name="Finished run",
        status="completed",
        started_at=start,
        finished_at=start + timedelta(seconds=3725),
    )
    client = client_for(roles["users"]["coder"])
    detail = client.get(f"/studies/{study.pk}/runs/{run.pk}/").content.decode()
    assert 'id="run-elapsed">1 h 02 min 05 s<' in detail
    listing = client.get(f"/studies/{study.pk}/runs/").content.decode()
    assert "1 h 02 min 05 s" in listing


def test_duration_format():
    from datetime import datetime, timedelta

    from stereoscope.templatetags.durations import duration

    t0 = datetime(2026, 1, 1)
    assert [duration(t0, t0 + timedelta(seconds=s)) for s in (0, 12, 125, 3725, 90061)] == [
        "0 s",
        "12 s",
        "2 min 05 s",
        "1 h 02 min 05 s",
        "25 h 01 min 01 s",
    ]
    assert duration(None, t0) == "" and duration(t0, None) == ""
