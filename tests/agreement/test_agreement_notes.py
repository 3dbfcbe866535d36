"""The agreement report says each kind of note once, with the rows it applies to."""

import re
from collections import Counter

import pytest

from tests.agreement.conftest import clear_report_cache, coded_study, fast_password_hasher  # noqa: F401


def add_unused_codes(ns, n):
    """Codes nobody applied: their coefficients are undefined and each row carries the same notes."""
    from annotation.models import Code

    parent = ns.codebook.codes.get(name="Leadership")
    return [
        Code.objects.create(codebook=ns.codebook, parent=parent, name=f"Unused code {i:02d}", order=10 + i)
        for i in range(n)
    ]


@pytest.mark.django_db
def test_each_note_said_once_with_its_rows(coded_study, client_for):  # noqa: F811
    ns = coded_study
    add_unused_codes(ns, 12)
    html = client_for(ns.users["researcher"]).get(f"/studies/{ns.study.pk}/agreement/?bootstrap=0").content.decode()
    table = re.search(r'<table class="table" id="code-agreement">.*?</table>', html, re.S).group(0)
    notes = re.search(r'<dl class="table-notes" id="code-agreement-notes">(.*?)</dl>', html, re.S).group(1)
    texts = [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<dd class=\"note-text\">(.*?)</dd>", notes, re.S)]
    assert texts and len(texts) == len(set(texts))  # each note once
    assert all(t not in table for t in texts)  # no note text repeated inside the table rows
    undefined = next(i for i, t in enumerate(texts) if "undefined" in t)
    applies = re.findall(r'<dd class="note-rows">(.*?)</dd>', notes, re.S)[undefined]
    assert all(f"Unused code {i:02d}" in applies for i in range(12))
    mark = re.findall(r"<dt[^>]*>(.*?)</dt>", notes, re.S)[undefined].strip()
    marked_rows = Counter(re.findall(r'<sup class="note-mark">([^<]*)</sup>', table))
    assert marked_rows[mark] >= 12
