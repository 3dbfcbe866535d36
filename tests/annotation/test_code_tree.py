"""A codebook's codes as a tree are built in one place, annotation.selectors.code_tree: the codebook page and the
coding workspace, the codebook export format (JSON / CSV / .qdc) and the .qdpx project show the same tree."""

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from annotation import selectors, services

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def book(study, small_codebook):
    """Leadership > (M charisma > Boss, F charisma), Care > (F communion, M communion merged away)."""
    from annotation.models import Code

    cb, codes = small_codebook(study)
    boss = services.create_code(cb, name="Boss", parent=codes["lead_m"])
    Code.objects.filter(pk=codes["care_m"].pk).update(active=False, merged_into=codes["care_f"])
    return cb, {**codes, "boss": boss}


def shape(nodes):
    return [(n.name, n.depth, shape(n.child_nodes)) for n in nodes]


def dict_shape(nodes, depth=0):
    return [(n["name"], depth, dict_shape(n["children"], depth + 1)) for n in nodes]


EXPECTED = [
    ("Leadership", 0, [("M charisma", 1, [("Boss", 2, [])]), ("F charisma", 1, [])]),
    ("Care", 0, [("F communion", 1, [])]),
]


def test_code_tree_nests_codes_in_order_without_merged_ones_in_one_query(book, django_assert_num_queries):
    cb, codes = book
    with django_assert_num_queries(1):
        tree = selectors.code_tree(cb)
        boss = tree[0].child_nodes[0].child_nodes[0]
        assert boss.parent.parent.name == "Leadership"  # parents in memory: paths without queries
        assert boss.path() == "Leadership/M charisma/Boss"
    assert shape(tree) == EXPECTED
    assert [c.name for c in selectors.flat_codes(tree)] == [
        "Leadership",
        "M charisma",
        "Boss",
        "F charisma",
        "Care",
        "F communion",
    ]
    assert tree[0].has_children and not boss.has_children


def test_keep_decides_which_codes_stand_and_a_left_out_code_takes_its_subtree(book):
    cb, codes = book
    everything = selectors.code_tree(cb, active_only=False)
    assert [c.name for c in everything[1].child_nodes] == ["F communion", "M communion"]
    pruned = selectors.code_tree(cb, keep=lambda code: code.name != "M charisma")
    assert shape(pruned)[0] == ("Leadership", 0, [("F charisma", 1, [])])


def test_the_export_format_and_the_qdpx_show_the_same_tree(book, study, tmp_path):
    from annotation.refi_services import export_qdpx

    cb, _ = book
    assert dict_shape(services.codebook_tree(cb)["codes"]) == EXPECTED
    assert services.codebook_tree(cb)["codes"][0]["children"][0]["children"][0]["path"] == "Leadership/M charisma/Boss"

    path = tmp_path / "p.qdpx"
    export_qdpx(study, path, options={})
    with zipfile.ZipFile(path) as zf:
        root = ElementTree.fromstring(zf.read("project.qde"))
    ns = {"q": root.tag.split("}")[0].strip("{")}

    def codes(element, depth=0):
        return [(c.get("name"), depth, codes(c, depth + 1)) for c in element.findall("q:Code", ns)]

    assert codes(root.find("q:CodeBook/q:Codes", ns)) == EXPECTED


def test_the_codebook_page_shows_the_tree_in_its_order(book, study, client_for, roles):
    from django.urls import reverse

    from stereoscope.models import Membership

    cb, codes = book
    Membership.objects.create(study=study, user=roles["users"]["researcher"], role="researcher")
    response = client_for(roles["users"]["researcher"]).get(reverse("annotation-codebook", args=[study.pk, cb.pk]))
    html = response.content.decode()
    order = ["lead", "lead_m", "boss", "lead_f", "care", "care_f"]
    positions = [html.find(f'data-code-id="{codes[key].pk}"') for key in order]
    assert all(p > 0 for p in positions) and positions == sorted(positions), positions
    assert f'data-code-id="{codes["care_m"].pk}"' not in html  # merged away


def test_no_other_module_builds_a_code_tree():
    """Grouping codes under their parents for display or export happens only in the selector (a study's CodeIndex
    in annotation/datasets.py keeps a parent map for "a code with its sub-codes" filters, not to build a tree)."""
    grouping = re.compile(r"setdefault\(\s*\w+\.parent_id|child_nodes\s*=|index\.children")
    found = []
    for app in ("annotation", "agreement", "exports", "recipes", "measures", "judging"):
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "annotation" / "selectors.py":
                continue
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in grouping.finditer(text)]
    assert found == []
    for module in ("views.py", "services/codebooks.py", "refi_services.py"):
        assert "code_tree(" in (ROOT / "annotation" / module).read_text(encoding="utf-8"), module
