"""Span coding with the keyboard alone: two spans and a whole story coded, one coding reassigned, one removed."""

import pytest

from annotation.models import Assignment, Coding
from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401

from .axe import blocking_violations, describe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STORY = "Alex met Sam at the bakery. She led the team with calm. He cared for the kids and baked bread."


@pytest.fixture
def keyboard_setup(roles, outputs_factory, small_codebook):  # noqa: F811
    study = roles["a"]
    cb, codes = small_codebook(study)
    (out,) = outputs_factory(study, [STORY])
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=roles["users"]["coder"], position=1)
    return {"study": study, "cb": cb, "codes": codes, "out": out}


def active(page, js):
    return page.evaluate(f"() => {{ const el = document.activeElement; return !!el && ({js}); }}")


def wait_active(page, js):
    page.wait_for_function(f"() => {{ const el = document.activeElement; return !!el && ({js}); }}")


def tab_to(page, js, limit=80):
    """Press Tab until the focused element matches a JS condition on `el`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if active(page, js):
            return
    raise AssertionError(f"Tab never reached: {js}")


def selected_text(page):
    return page.evaluate("() => window.getSelection().toString()")


def settled(page):
    """Wait until htmx has finished swapping and settling (focus and cursor are restored on settle)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    page.wait_for_timeout(100)


def wait_codings(page, n):
    page.wait_for_function(f"() => document.querySelectorAll('#codings li[data-coding]').length === {n}")
    settled(page)


def live_text(page):
    page.wait_for_timeout(150)
    return page.locator("#live-region").inner_text()


def test_coder_codes_reassigns_and_removes_with_the_keyboard_only(page, login, keyboard_setup):
    s, cb, codes, out = (keyboard_setup[k] for k in ("study", "cb", "codes", "out"))
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{out.pk}/")
    assert page.locator("#coding-keys").count() == 1  # the keys are documented on the page

    # Tab into the story: the cursor starts on the first word
    tab_to(page, "el.id === 'story'")
    assert selected_text(page) == "Alex"
    page.keyboard.press("ArrowRight")
    assert selected_text(page) == "met"
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    assert selected_text(page) == "met Sam at"
    page.keyboard.press("Escape")  # back to the word under the cursor
    assert selected_text(page) == "at"
    page.keyboard.press("Home")
    page.keyboard.press("Shift+ArrowRight")
    assert selected_text(page) == "Alex met"
    page.keyboard.press("1")  # M charisma
    wait_codings(page, 1)
    first = Coding.objects.get()
    assert (first.code_id, first.start, first.end, first.quote) == (codes["lead_m"].pk, 0, 8, "Alex met")
    wait_active(page, "el.id === 'story'")  # focus came back to the story, cursor after the span
    page.wait_for_function("() => window.getSelection().toString() === 'Sam'")
    assert "Coded" in live_text(page)

    # a whole sentence: next sentence, then extend to its end
    page.keyboard.press("ArrowDown")
    assert selected_text(page) == "She"
    page.keyboard.press("Shift+ArrowDown")
    assert selected_text(page) == "She led the team with calm"
    page.keyboard.press("3")  # F communion
    wait_codings(page, 2)
    second = Coding.objects.exclude(pk=first.pk).get()
    start = STORY.index("She led")
    sentence = "She led the team with calm"
    assert (second.code_id, second.start, second.end) == (codes["care_f"].pk, start, start + len(sentence))

    # the whole story: Tab to the document-code menu, pick a code by keyboard, press Enter on the button
    tab_to(page, "el.closest('#doc-code-form') && el.tagName === 'SELECT'")
    target = codes["care_m"]
    for _ in range(10):
        if page.evaluate("() => document.activeElement.value") == str(target.pk):
            break
        page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.value") == str(target.pk)
    page.keyboard.press("Tab")
    assert active(page, "el.closest('#doc-code-form') && el.tagName === 'BUTTON'")
    page.keyboard.press("Enter")
    page.wait_for_selector("#doc-codings li[data-coding]")
    settled(page)
    wait_active(page, "el.closest('#doc-code-form')")  # focus stays in the form
    whole = Coding.objects.get(start__isnull=True)
    assert whole.code_id == target.pk and whole.output_id == out.pk

    # reassign the first coding: back to the story, cursor on it, Enter jumps to its coding
    tab_to(page, "el.id === 'story'")
    page.keyboard.press("Home")
    assert selected_text(page) == "Alex"
    page.keyboard.press("Enter")
    assert active(page, f"el.dataset.coding === '{first.pk}'")
    page.keyboard.press("Tab")
    assert active(page, "el.classList.contains('reassign-select')")
    for _ in range(10):
        if page.evaluate("() => document.activeElement.value") == str(codes["lead_f"].pk):
            break
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    assert active(page, "el.tagName === 'BUTTON' && el.textContent.trim() === 'Reassign'")
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"() => document.querySelector('#codings li[data-coding=\"{first.pk}\"] .coding-code')"
        f".textContent === 'F charisma'"
    )
    settled(page)
    first.refresh_from_db()
    assert first.code_id == codes["lead_f"].pk
    wait_active(page, f"el.dataset.coding === '{first.pk}'")  # focus stays on the reassigned coding
    assert "reassigned" in live_text(page)

    # remove the second coding: Esc to the story, down to its sentence, Enter, Delete
    page.keyboard.press("Escape")
    assert active(page, "el.id === 'story'")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    assert selected_text(page) == "She"
    page.keyboard.press("Enter")
    assert active(page, f"el.dataset.coding === '{second.pk}'")
    page.keyboard.press("Delete")
    wait_codings(page, 1)
    assert not Coding.objects.filter(pk=second.pk).exists()
    assert Coding.objects.count() == 2
    wait_active(page, "el.id === 'codings-heading'")  # focus is not lost
    assert "removed" in live_text(page)
    assert not page.dialogs
    violations = blocking_violations(page)  # the workspace as the keyboard left it
    assert not violations, describe(violations)


def test_a_refused_edit_is_announced_and_focused(page, login, keyboard_setup):
    s, cb, out = (keyboard_setup[k] for k in ("study", "cb", "out"))
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{out.pk}/")
    tab_to(page, "el.id === 'story'")
    page.keyboard.press("1")
    wait_codings(page, 1)
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # the reassign menu, left on "reassign to…"
    page.keyboard.press("Tab")  # the Reassign button
    page.keyboard.press("Enter")
    page.wait_for_selector("#ws-error")
    settled(page)
    assert "Choose a code." in live_text(page)
    assert active(page, "el.id === 'ws-error'")
    assert Coding.objects.get().code_id == keyboard_setup["codes"]["lead_m"].pk  # nothing changed


PHRASE_BOX_JS = """(phrase) => {
  const root = document.getElementById('story');
  const node = root.querySelector('.seg').firstChild;
  const at = node.data.indexOf(phrase);
  const range = document.createRange(); range.setStart(node, at); range.setEnd(node, at + phrase.length);
  const r = range.getClientRects();
  return [r[0].left + 1, r[0].top + r[0].height / 2, r[r.length - 1].right - 1, r[r.length - 1].top + r[0].height / 2];
}"""


def test_a_mouse_drag_still_selects_what_was_dragged(page, login, keyboard_setup):
    """The story is focusable now; focusing it by mouse must not replace the dragged selection with the cursor."""
    s, cb, codes, out = (keyboard_setup[k] for k in ("study", "cb", "codes", "out"))
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{out.pk}/")
    x1, y1, x2, y2 = page.evaluate(PHRASE_BOX_JS, "the bakery")
    page.mouse.move(x1, y1)
    page.mouse.down()
    page.mouse.move(x2, y2, steps=8)
    page.mouse.up()
    assert selected_text(page) == "the bakery"
    page.keyboard.press("2")
    wait_codings(page, 1)
    coding = Coding.objects.get()
    start = STORY.index("the bakery")
    assert (coding.code_id, coding.start, coding.end) == (codes["lead_f"].pk, start, start + len("the bakery"))
