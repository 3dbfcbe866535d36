"""The workspace's code panel and its option lists are built in Python (issue 36: the template loop over 53 codes was
5 of the page's 7 ms of rendering): byte for byte what the template loop and format_html_join made."""

import pytest
from django.template import engines
from django.utils.html import format_html_join

from annotation import selectors, services, views
from annotation.models import Memo

pytestmark = pytest.mark.django_db

# the code panel's loop as _workspace.html had it, the reference the Python rendering must match
TEMPLATE_LOOP = (
    '{% for node in flat %}<li class="{% if not node.codable %}group{% endif %}" style="margin-left: '
    '{{ node.depth }}rem">\n            {% if node.codable %}<button type="button" class="code-btn" '
    'data-code="{{ node.pk }}" {% if node.shortcut %}data-shortcut="{{ node.shortcut }}"{% endif %}\n'
    '              hx-post="{{ post_url }}" hx-vals=\'{"op": "code", "code": "{{ node.pk }}"}\' '
    'hx-include="#sel-start, #sel-end"\n              hx-target="#ws" hx-swap="outerHTML" '
    'title="{{ node.description }}"><span class="chip" style="background: {{ node.color }}"></span>{{ node.name }}'
    "{% if node.shortcut %} <kbd>{{ node.shortcut }}</kbd>{% endif %}</button>\n            {% else %}"
    '<span class="group-name"><span class="chip" style="background: {{ node.color }}"></span>{{ node.name }}</span>'
    '{% endif %}\n            {% for m in node.memo_list %}<div class="memo small">📝 {{ m.text }}</div>{% endfor %}'
    "</li>{% endfor %}"
)


@pytest.fixture
def tree(roles, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    odd = services.create_code(
        cb, name='<b>"Bold" & co</b>', parent=codes["care"], description='says "hi" <i>', color="#123456"
    )
    services.create_code(
        cb, name="Deep", parent=services.create_code(cb, name="Sub & group", parent=odd.parent, codable=False)
    )
    author = roles["users"]["coder"]
    Memo.objects.create(study=study, author=author, code=codes["lead_f"], text="memo <one>")
    Memo.objects.create(study=study, author=author, code=codes["lead_f"], text="memo & two")
    Memo.objects.create(study=study, author=author, code=codes["care"], text="on a group")
    flat = list(selectors.flat_codes(selectors.code_tree(cb)))
    memos = {}
    for memo in Memo.objects.filter(study=study).order_by("pk"):
        memos.setdefault(memo.code_id, []).append(memo)
    for code in flat:
        code.memo_list = memos.get(code.pk, [])
    return flat


@pytest.mark.parametrize("post_url", ["/s/1/coding/codebooks/2/stories/3/edit/", "/s/1/edit/?all=1&x=<y>"])
def test_the_code_panel_is_the_template_loops_bytes(tree, post_url):
    expected = engines["django"].from_string(TEMPLATE_LOOP).render({"flat": tree, "post_url": post_url})
    assert views.code_panel_html(tree, post_url) == expected
    assert "&lt;b&gt;&quot;Bold&quot; &amp; co&lt;/b&gt;" in expected and "memo &amp; two" in expected


def test_the_option_lists_and_paths_are_format_html_joins_bytes(tree):
    pairs = [(c.pk, c.path()) for c in tree]
    assert views._options(pairs) == format_html_join("", '<option value="{}">{}</option>', pairs)
    assert views._code_paths(tree) == {c.pk: c.path() for c in tree}
    assert "Care/Sub &amp; group/Deep" in views._options(pairs)
