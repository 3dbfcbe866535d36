import csv
import io

import pytest

from generation.models import Toolkit
from judging import rounds
from judging.models import ItemWeight
from judging.services import JudgingError, import_weights, parse_weights, weights_csv
from tests.judging.helpers import build_study, script_round, seed_template

pytestmark = pytest.mark.django_db


@pytest.fixture
def exported(study, make_endpoint, fake_provider):
    data = build_study(study, make_endpoint, trials=1, injection=False)
    rnd = rounds.create_round(
        study,
        name="r",
        template=seed_template(study),
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        batch_size=5,
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    rounds.start(rnd)
    return data, weights_csv(study, [rnd.pk])


def edit_csv(text, item, **changes):
    comments = [line for line in text.splitlines() if line.startswith("#")]
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("#")))))
    for row in rows:
        if row["item_number"] == str(item):
            row.update({k: str(v) for k, v in changes.items()})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return "\n".join(comments) + "\n" + out.getvalue()


def test_csv_reimport_dropping_flagged_prompts(study, exported):
    data, text = exported
    toolkit = data["toolkit"]
    flagged = edit_csv(text, 3, flags="weak: detection 0.10 below 0.30")
    target, n = import_weights(study, toolkit, flagged.encode(), filename="w.csv", drop_flagged=True)
    assert target.version == 2 and n == 2
    assert sorted(target.items.values_list("number", flat=True)) == [1, 2]
    assert sorted(ItemWeight.objects.filter(toolkit=target).values_list("item__number", flat=True)) == [1, 2]
    assert sorted(toolkit.items.values_list("number", flat=True)) == [1, 2, 3]  # the old version is untouched


def test_bad_weight_files_change_nothing(study, exported):
    data, text = exported
    toolkit = data["toolkit"]
    before = Toolkit.objects.count()
    cases = [
        (b"", "empty"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"a,b\n1,2\n", "needs the columns item_number and weight"),
        (edit_csv(text, 2, weight="heavy").encode(), "is not a number"),
        (edit_csv(text, 2, item_number="1").encode(), "appears twice"),
        (edit_csv(text, 2, item_number="0").encode(), "not a positive whole number"),
        (b'{"format": "stereoscope-toolkit-weights", "items": []}', "no items"),
        (b"{not json", "Not valid JSON"),
    ]
    for content, message in cases:
        with pytest.raises(JudgingError, match=message):
            import_weights(study, toolkit, content, filename="w.csv")
    with pytest.raises(JudgingError, match="needs a new toolkit version"):
        import_weights(study, toolkit, edit_csv(text, 3, flags="weak").encode(), new_version=False, drop_flagged=True)
    assert Toolkit.objects.count() == before and not ItemWeight.objects.exists()


def test_parse_weights_reads_method_from_the_export(exported):
    _, text = exported
    meta, rows = parse_weights(text)
    assert meta["method"] == "efficiency" and [r["item_number"] for r in rows] == [1, 2, 3]
    # The seed's weights sum to the number of prompts in each dimension (items 1 and 2 share one).
    assert abs(sum(r["weight"] for r in rows if r["item_number"] in (1, 2)) - 2) < 1e-9


@pytest.mark.parametrize(
    "document, message",
    [
        ({"format": "other", "items": [{"item_number": 1, "weight": 1}]}, "Not a weights file"),
        ([1, 2], "Not a weights file"),
        ({"format": "stereoscope-toolkit-weights"}, "no items"),
        ({"format": "stereoscope-toolkit-weights", "items": ["x"]}, "Row 1: not an object"),
        ({"format": "stereoscope-toolkit-weights", "items": [{"item_number": 2}]}, "Row 1: has no weight"),
        ({"format": "stereoscope-toolkit-weights", "items": [{"item_number": 2, "weight": -1}]}, "Item 2 weight: -1"),
        (
            {"format": "stereoscope-toolkit-weights", "items": [{"item_number": 2, "weight": 1, "rate": 1.5}]},
            "Item 2 rate: 1.5 is outside 0–1",
        ),
        (
            {"format": "stereoscope-toolkit-weights", "items": [{"item_number": 1.5, "weight": 1}]},
            "Row 1: item_number 1.5 is not a positive whole number",
        ),
        (
            {"format": "stereoscope-toolkit-weights", "items": [{"item_number": 3, "weight": True}]},
            "Item 3 weight: True is not a number",
        ),
    ],
)
def test_a_json_weights_file_is_checked_against_its_schema(document, message):
    import json

    with pytest.raises(JudgingError, match=message):
        parse_weights(json.dumps(document), "w.json")


def test_a_csv_weights_file_names_each_bad_cell_by_item():
    text = "item_number,weight,rate,n\n1,0.5,,\n2,heavy,2,-3\nx,1,,\n"
    with pytest.raises(JudgingError) as caught:
        parse_weights(text, "w.csv")
    said = str(caught.value)
    for part in (
        "Item 2 weight: 'heavy' is not a number",
        "Item 2 rate: 2.0 is outside 0–1",
        "Item 2 n: -3.0 is below 0",
        "Row 3: item_number 'x' is not a positive whole number",
    ):
        assert part in said, said
    meta, rows = parse_weights("item_number,weight,rate,n,flags\n1,0.5,,,\n2,1,0.25,4,weak; odd\n", "w.csv")
    assert rows[0] == {
        "item_number": 1,
        "weight": 0.5,
        "method": "",
        "rate": None,
        "ci_low": None,
        "ci_high": None,
        "n": None,
        "flags": [],
    }
    assert rows[1]["weight"] == 1.0 and rows[1]["rate"] == 0.25 and rows[1]["n"] == 4.0
    assert rows[1]["flags"] == ["weak", "odd"]
