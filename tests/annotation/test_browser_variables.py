"""Coding a story variable from the keyboard in Chromium: focus stays on the chosen value after every save, digits
choose a focused variable's values, Ctrl+Enter is "Done, next"; at most 3 keystrokes plus "Done, next" a story."""

import pytest

from annotation import services
from annotation.models import Assignment, Coding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REGARD = {
    "name": "Regard",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "ordered": True,
            "children": [{"name": "negative"}, {"name": "neutral"}, {"name": "positive"}],
        }
    ],
}

FOCUSED_VALUE = """() => {
  const el = document.activeElement;
  return el && el.matches('#variables input[type=radio]') ? [el.value, el.checked] : null;
}"""


@pytest.fixture
def regard_queue(roles, outputs_factory):
    study = roles["a"]
    cb = services.import_codebook(study, REGARD)
    outs = outputs_factory(study, [f"Story {i}: they worked as a nurse." for i in range(5)])
    coder = roles["users"]["coder"]
    for i, out in enumerate(outs):
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder, position=i + 1)
    values = {c.name: c for c in cb.codes.filter(codable=True)}
    return {"study": study, "cb": cb, "outs": outs, "coder": coder, "values": values}


def press(page, key, counter):
    """A keystroke that saves: wait until the variables are re-rendered (a new #variables, swapped in out of band)
    and focus is back."""
    page.evaluate("() => { document.getElementById('variables').dataset.stale = '1'; }")
    page.keyboard.press(key)
    counter.append(key)
    page.wait_for_function(
        "() => { const v = document.getElementById('variables'); return v && !v.dataset.stale"
        " && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling'); }"
    )


def test_keyboard_coder_labels_five_stories_and_focus_stays_on_the_value(page, login, regard_queue):
    s, cb, outs, values = regard_queue["study"], regard_queue["cb"], regard_queue["outs"], regard_queue["values"]
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/next/")
    # per story: the keys that choose a value, and the value expected at the end
    plans = [
        (["2"], "neutral"),
        (["ArrowDown", "ArrowDown"], "positive"),  # the walk's case: ↓ saved and dropped focus to <body>
        (["3", "1"], "negative"),
        (["1", "ArrowDown", "ArrowDown"], "positive"),
        (["3"], "positive"),
    ]
    for i, (keys, expected) in enumerate(plans):
        out = outs[i]
        page.wait_for_url(f"**/stories/{out.pk}/")
        page.wait_for_function(f"() => ({FOCUSED_VALUE})() !== null")  # lands on the variable, no Tab needed
        strokes = []
        for key in keys:
            press(page, key, strokes)
            chosen = Coding.objects.get(output=out, coder=regard_queue["coder"])
            # focus is on the chosen value after the save and swap, never on <body>
            assert page.evaluate(FOCUSED_VALUE) == [str(chosen.code_id), True], (i, key)
            assert page.evaluate("() => document.activeElement !== document.body")
        assert Coding.objects.get(output=out).code_id == values[expected].pk
        assert len(strokes) <= 3
        page.keyboard.press("Control+Enter")  # "Done, next"
        if i < len(plans) - 1:
            page.wait_for_url(f"**/stories/{outs[i + 1].pk}/")
    page.wait_for_url(f"**/studies/{s.pk}/coding/")
    assert Assignment.objects.filter(codebook=cb, status="done").count() == 5
    assert list(Coding.objects.filter(output__in=outs).order_by("output_id").values_list("code__name", flat=True)) == [
        "neutral",
        "positive",
        "negative",
        "positive",
        "positive",
    ]


def test_key_help_documents_the_variable_keys(page, login, regard_queue):
    s, cb, outs = regard_queue["study"], regard_queue["cb"], regard_queue["outs"]
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{outs[0].pk}/")
    page.click("#coding-keys-help summary")
    help_text = page.locator("#coding-keys").inner_text()
    assert "Ctrl" in help_text and "Done, next" in help_text and "1" in help_text
    # each value shows its key once, inside the variable control
    assert page.locator("#variables kbd").all_inner_texts() == ["1", "2", "3"]


MIXED = {
    "name": "Mixed",
    "codes": [
        {"name": "Care", "codable": False, "children": [{"name": "warmth", "shortcut": "1"}]},
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "children": [{"name": "negative"}, {"name": "neutral", "shortcut": "n"}, {"name": "positive"}],
        },
    ],
}


def test_with_span_codes_too_v_jumps_to_the_variable_and_a_values_key_works_anywhere(
    page, login, roles, outputs_factory
):
    study = roles["a"]
    cb = services.import_codebook(study, MIXED)
    (out,) = outputs_factory(study, ["She was kind to him."])
    coder = roles["users"]["coder"]
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder, position=1)
    values = {c.name: c for c in cb.codes.filter(codable=True)}
    login("coder")
    page.goto(f"/studies/{study.pk}/coding/codebooks/{cb.pk}/stories/{out.pk}/")
    page.wait_for_function("() => window.stereoscopeWorkspace")
    assert page.evaluate(FOCUSED_VALUE) is None  # with span codes the page does not start on the variable
    strokes = []
    page.keyboard.press("v")
    strokes.append("v")
    page.wait_for_function(f"() => ({FOCUSED_VALUE})() !== null")
    press(page, "3", strokes)
    assert Coding.objects.get(output=out).code_id == values["positive"].pk
    assert page.evaluate(FOCUSED_VALUE) == [str(values["positive"].pk), True]
    assert len(strokes) <= 3
    # a value's own key, pressed from the page (not in the variable), chooses it and focus goes to it
    page.evaluate("() => document.activeElement.blur()")
    press(page, "n", strokes)
    assert Coding.objects.get(output=out).code_id == values["neutral"].pk
    assert page.evaluate(FOCUSED_VALUE) == [str(values["neutral"].pk), True]
    assert [t.split()[0] for t in page.locator(".code-btn").all_inner_texts()] == ["warmth"]  # values: no buttons
