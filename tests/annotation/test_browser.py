"""The coding workspace in Chromium: Unicode offsets, shortcuts, memos, inductive codes, merge + undo, XSS,
two coders."""

import pytest

from annotation import services
from annotation.models import Assignment, Code, CodeOperation, Coding, Memo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STORY = (
    "Dr. Zoë Okafor 👩\u200d🔬 ran the lab.\nHer partner José\u0301 🎉 baked bread for the neighbours, "
    "and everyone called him kind."
)

SELECT_JS = """([phrase, occurrence]) => {
  const root = document.getElementById('story');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = []; let text = '';
  while (walker.nextNode()) { nodes.push([walker.currentNode, text.length]); text += walker.currentNode.data; }
  let at = -1; for (let i = 0; i <= (occurrence || 0); i++) at = text.indexOf(phrase, at + 1);
  if (at < 0) throw new Error('phrase not found: ' + phrase);
  const end = at + phrase.length;   // UTF-16 units, as the browser counts
  const locate = (pos) => { for (const [n, off] of nodes) { if (pos <= off + n.data.length) return [n, pos - off]; } };
  const [sn, so] = locate(at); const [en, eo] = locate(end);
  const range = document.createRange(); range.setStart(sn, so); range.setEnd(en, eo);
  const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);
  document.dispatchEvent(new Event('selectionchange'));
  return [at, end];
}"""

HIGHLIGHT_JS = """(id) => Array.from(document.querySelectorAll('#story .seg.hl'))
  .filter(s => s.dataset.c.split(' ').includes(String(id)))
  .map(s => [Number(s.dataset.s), Number(s.dataset.e), s.textContent])"""


def select(page, phrase, occurrence=0):
    page.wait_for_function("() => window.stereoscopeWorkspace")  # the deferred workspace script has run
    # htmx idle: the last save's swap has settled and the workspace has put focus and cursor back
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    page.wait_for_timeout(100)
    # Clear the last selection's offsets first, so the wait below sees this selection, not a stale one
    # (pressing a shortcut on a stale selection would save the previous span again).
    page.evaluate("() => { document.getElementById('sel-start').value = ''; }")
    span = page.evaluate(SELECT_JS, [phrase, occurrence])
    page.wait_for_function("() => document.getElementById('sel-start').value !== ''")
    return span


def highlighted(page, coding):
    parts = page.evaluate(HIGHLIGHT_JS, coding.pk)
    return (parts[0][0], parts[-1][1], "".join(p[2] for p in parts)) if parts else None


@pytest.fixture
def coding_setup(roles, outputs_factory, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    outs = outputs_factory(
        study,
        [STORY, "A second story about Ana.", 'Bad <script>alert(1)</script> and <img src=x onerror="alert(2)"> text.'],
    )
    for i, out in enumerate(outs):
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=roles["users"]["coder"], position=i + 1)
    return {"study": study, "cb": cb, "codes": codes, "outs": outs, "users": roles["users"]}


def test_coder_codes_unicode_spans_by_shortcut_with_memo_and_inductive_code(page, login, coding_setup):
    s, codes = coding_setup["study"], coding_setup["codes"]
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/")
    page.click("text=Continue coding")
    page.wait_for_selector("#story")
    assert page.locator("#story").inner_text().startswith("Dr. Zoë Okafor")

    phrase = "José\u0301 🎉 baked"
    utf16 = select(page, phrase)
    assert utf16[1] - utf16[0] == len(phrase.encode("utf-16-le")) // 2  # the browser counted UTF-16 units
    page.keyboard.press("4")  # M communion
    page.wait_for_selector("#codings li[data-coding]")
    coding = Coding.objects.get()
    start = STORY.index(phrase)
    assert (coding.code_id, coding.start, coding.end, coding.quote) == (
        codes["care_m"].pk,
        start,
        start + len(phrase),
        phrase,
    )
    assert highlighted(page, coding) == (start, start + len(phrase), phrase)

    page.click(f"#codings li[data-coding='{coding.pk}'] details.memo-form summary")
    page.fill(f"#codings li[data-coding='{coding.pk}'] details.memo-form textarea", "Cooking man, called kind 🙂")
    page.click(f"#codings li[data-coding='{coding.pk}'] details.memo-form button")
    page.wait_for_selector("#codings .memo:has-text('Cooking man')")

    # an overlapping selection (emoji + accented name) becomes a new inductive code
    phrase2 = "Zoë Okafor 👩\u200d🔬"
    select(page, phrase2)
    page.fill("#new-code-form input[name=name]", "F scientist")
    page.select_option("#new-code-form select[name=parent]", str(codes["lead"].pk))
    page.click("#new-code-form button[type=submit]")
    page.wait_for_selector(".code-btn:has-text('F scientist')")
    new_code = Code.objects.get(name="F scientist")
    assert new_code.kind == "inductive" and new_code.parent_id == codes["lead"].pk
    second = Coding.objects.get(code=new_code)
    start2 = STORY.index(phrase2)
    assert (second.start, second.end, second.quote) == (start2, start2 + len(phrase2), phrase2)

    # a third span overlapping the first: both stay visible
    select(page, "bread for the")
    page.keyboard.press("3")
    page.wait_for_function("() => document.querySelectorAll('#codings li[data-coding]').length === 3")
    select(page, "🎉 baked bread")
    page.keyboard.press("1")
    page.wait_for_function("() => document.querySelectorAll('#codings li[data-coding]').length === 4")
    assert page.locator("#story .seg.overlap").count() >= 2

    page.reload()
    page.wait_for_selector("#story")
    for c in Coding.objects.all():
        assert highlighted(page, c) == (c.start, c.end, STORY[c.start : c.end]), c.code.name
    assert page.locator("#codings .memo:has-text('Cooking man, called kind 🙂')").count() == 1
    assert page.locator(".code-btn:has-text('F scientist')").count() == 1
    assert Memo.objects.get().coding_id == coding.pk
    assert page.dialogs == []


def test_researcher_merges_into_dimension_watches_frequencies_and_undoes(
    page, login, coding_setup, browser, live_server
):
    s, cb, codes, outs = coding_setup["study"], coding_setup["cb"], coding_setup["codes"], coding_setup["outs"]
    coder = coding_setup["users"]["coder"]
    for key, span in [("lead_m", (0, 3)), ("lead_m", (4, 7)), ("lead_f", (8, 12)), ("care_f", (20, 25))]:
        services.create_coding(
            study=s, codebook=cb, output=outs[0], code=codes[key], coder=coder, start=span[0], end=span[1]
        )
    login("researcher")
    freq_page = page.context.new_page()
    freq_page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/frequencies/")
    freq_page.select_option("#freq-controls select[name=level]", "dimension")
    freq_page.wait_for_selector("tr[data-label='Leadership'] td.total:text-is('3')")
    assert freq_page.locator("tr[data-label='Care'] td.total").inner_text() == "1"

    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/")
    page.check(f"li[data-code-id='{codes['lead_m'].pk}'] input[type=checkbox]")
    page.check(f"li[data-code-id='{codes['lead_f'].pk}'] input[type=checkbox]")
    page.fill("#merge-form input[name=new_name]", "Charisma (any gender)")
    page.select_option("#merge-form select[name=new_parent]", str(codes["care"].pk))
    page.click("#merge-button")
    page.wait_for_selector("li:has-text('Charisma (any gender)') .count[data-count='3']")
    assert not Code.objects.get(pk=codes["lead_m"].pk).active

    # the open frequency table refreshes by itself
    freq_page.wait_for_selector("tr[data-label='Care'] td.total:text-is('4')")
    assert freq_page.locator("tr[data-label='Leadership']").count() == 0

    page.click("#undo-button")
    page.wait_for_selector("#history li:has-text('(undone)')")
    assert CodeOperation.objects.get(kind="merge").undone_at is not None
    assert not Code.objects.filter(name="Charisma (any gender)").exists()
    assert sorted(Coding.objects.values_list("code_id", flat=True)) == sorted(
        [codes["lead_m"].pk, codes["lead_m"].pk, codes["lead_f"].pk, codes["care_f"].pk]
    )
    freq_page.wait_for_selector("tr[data-label='Leadership'] td.total:text-is('3')")
    assert freq_page.locator("tr[data-label='Care'] td.total").inner_text() == "1"


def test_script_in_story_renders_as_text(page, login, coding_setup):
    s, cb, outs = coding_setup["study"], coding_setup["cb"], coding_setup["outs"]
    login("coder")
    page.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{outs[2].pk}/")
    page.wait_for_selector("#story")
    text = page.locator("#story").inner_text()
    assert "<script>alert(1)</script>" in text and '<img src=x onerror="alert(2)">' in text
    assert page.locator("#story script, #story img").count() == 0
    select(page, "<script>alert(1)</script>")
    page.keyboard.press("2")
    page.wait_for_selector("#codings li[data-coding]")
    page.reload()
    page.wait_for_selector("#codings li[data-coding]")
    assert page.locator("#story script, #story img, #codings img").count() == 0
    assert Coding.objects.get().quote == "<script>alert(1)</script>"
    page.wait_for_timeout(300)
    assert page.dialogs == []


def test_two_coders_code_the_same_story_at_once(browser, live_server, coding_setup, make_user):
    from stereoscope.models import Membership
    from tests.conftest import PASSWORD

    s, cb, outs = coding_setup["study"], coding_setup["cb"], coding_setup["outs"]
    coder2 = make_user("coder2")
    Membership.objects.create(study=s, user=coder2, role="coder")
    Assignment.objects.filter(output=outs[0]).update(mode="consensus")
    Assignment.objects.create(study=s, codebook=cb, output=outs[0], coder=coder2, mode="consensus")
    pages = []
    for name in ("coder", "coder2"):
        ctx = browser.new_context(base_url=live_server.url)
        p = ctx.new_page()
        p.set_default_timeout(15000)
        p.goto("/accounts/login/")
        p.fill("input[name=username]", name)
        p.fill("input[name=password]", PASSWORD)
        p.click("button[type=submit]")
        p.wait_for_load_state()
        p.goto(f"/studies/{s.pk}/coding/codebooks/{cb.pk}/stories/{outs[0].pk}/")
        p.wait_for_selector("#story")
        pages.append(p)
    select(pages[0], "Zoë")
    select(pages[1], "José\u0301")
    pages[0].keyboard.press("2")
    pages[1].keyboard.press("4")
    for p in pages:
        p.wait_for_selector("#codings li[data-coding]")
    assert Coding.objects.count() == 2
    select(pages[0], "bread")
    select(pages[1], "bread")
    pages[0].keyboard.press("3")
    pages[1].keyboard.press("3")
    for p in pages:
        p.wait_for_function("() => document.querySelectorAll('#codings li[data-coding]').length >= 3")
    assert Coding.objects.count() == 4
    for p in pages:
        p.reload()
        p.wait_for_selector("#story")
        assert p.locator("#codings li[data-coding]").count() == 4  # consensus mode: everyone's codings
        p.context.close()
