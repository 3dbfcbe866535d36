import io
import zipfile

import pandas as pd

from exports.services import clean_options, runtime_options, write_export
from stereoscope.datasets import get_dataset


def rows(study, key, **raw):
    options = runtime_options(study, clean_options(study, raw))
    return list(get_dataset(key).rows(study, options))


def test_codings_rows(coded_study):
    study = coded_study["study"]
    result = rows(study, "codings")
    assert len(result) == 5
    span = next(r for r in result if r["code"] == "M charisma in leadership")
    assert span["code_path"] == "Leadership/Charisma/M charisma in leadership"
    assert span["dimension"] == "Leadership" and span["gender_tag"] == "M" and span["level"] == "span"
    assert span["quote"] == "She led the team" and span["end"] - span["start"] == 16
    assert span["memo"] == "Charisma, clearly.\nSecond line & <tag>"
    assert span["coder"] == "coder" and span["model"] == "gpt-4o" and span["item_number"] == 1
    assert span["item_dimension"] == "Leadership"
    doc = next(r for r in result if r["level"] == "document" and r["code"] == "F carer")
    assert doc["start"] is None and doc["dimension"] == "Family"
    loose = next(r for r in result if r["code"].startswith("Hero"))
    assert loose["dimension"] == "" and loose["code_path"] == "Hero <b>bold</b>"


def test_codings_filters_and_pseudonyms(coded_study):
    study, codes = coded_study["study"], coded_study["codes"]
    by_code = rows(study, "codings", code_ids=[codes["leadership"].pk])
    assert {r["code"] for r in by_code} == {"M charisma in leadership", "F caring leader"}  # sub-codes included
    assert {r["model"] for r in rows(study, "codings", models=["claude-x"])} == {"claude-x"}
    assert {r["item_number"] for r in rows(study, "codings", item_numbers=[1])} == {1}
    pseudo = rows(study, "codings", pseudonymise=True)
    names = {r["coder"] for r in pseudo}
    assert len(names) == 2 and all(n.startswith("P-") for n in names)
    assert names == {r["coder"] for r in rows(study, "codings", pseudonymise=True)}  # stable


def test_wide_table(coded_study):
    study, codes, outputs = coded_study["study"], coded_study["codes"], coded_study["outputs"]
    ds = get_dataset("analysis_wide")
    options = runtime_options(study, clean_options(study, {}))
    columns = [c.name for c in ds.columns_for(study, options)]
    charisma_col = f"code_{codes['charisma'].pk}_m_charisma_in_leadership"
    dim_col = f"dim_{codes['leadership'].pk}_leadership"
    rnd = coded_study["round"].pk
    assert charisma_col in columns and dim_col in columns
    assert f"verdict_r{rnd}_gpt_4o" in columns and f"verdict_r{rnd}_claude_x" in columns
    assert f"code_{codes['leadership'].pk}_leadership" not in columns  # dimensions are not codes
    table = {r["output_id"]: r for r in ds.rows(study, options)}
    first, second, third, fourth = (table[o.pk] for o in outputs[:4])
    assert first["coders_n"] == 2 and first[charisma_col] == 1 and first[dim_col] == 1
    assert first[f"dim_{codes['family'].pk}_family"] == 1
    assert first["gender_attribution"] == "F" and first["gender_attribution_n"] == 2
    assert second["gender_attribution"] == "M" and second[charisma_col] == 0 and second[dim_col] == 1
    assert third["coders_n"] == 1 and third[charisma_col] == 0  # assignment done, nothing applied
    assert fourth[dim_col] == 0
    assert table[outputs[4].pk][charisma_col] is None and table[outputs[4].pk]["coders_n"] == 0  # not coded
    assert first[f"verdict_r{rnd}_claude_x"] == 1 and first.get(f"verdict_r{rnd}_gpt_4o") is None
    assert first[f"verdict_r{rnd}_detected"] == 1.0 and third[f"verdict_r{rnd}_detected"] == 0.0
    assert first["model"] == "gpt-4o" and first["dimension"] == "Leadership" and first["trial"] == 1


def test_wide_csv_loads_in_pandas_with_missing_values(coded_study, tmp_path):
    study = coded_study["study"]
    write_export(
        study,
        "csv",
        tmp_path / "w.zip",
        dataset_keys=["analysis_wide", "codings", "codes", "memos", "gender_attributions"],
    )
    with zipfile.ZipFile(tmp_path / "w.zip") as zf:
        wide = pd.read_csv(io.BytesIO(zf.read("analysis_wide.csv")))
        dictionary = pd.read_csv(io.BytesIO(zf.read("data_dictionary.csv")))
        codes = pd.read_csv(io.BytesIO(zf.read("codes.csv")))
        memos = pd.read_csv(io.BytesIO(zf.read("memos.csv")))
    assert len(wide) == 6
    charisma = [c for c in wide.columns if c.startswith("code_") and "charisma" in c][0]
    assert wide[charisma].isna().sum() == 2 and wide[charisma].sum() == 1
    assert set(dictionary.loc[dictionary.dataset == "analysis_wide", "column"]) == set(wide.columns)
    assert codes.loc[codes.code == "M charisma in leadership", "codings"].item() == 1
    assert sorted(memos.target) == ["code", "coding", "output"]


def test_codings_csv_from_column_batches_is_the_row_by_row_csv(coded_study, tmp_path):
    """The codings CSV is written from column-wise batches; its bytes are those of the row writer over the dataset's
    rows, with hostile cells (formula starts, quotes, commas, newlines, None) escaped or not as asked."""
    from annotation.models import Code, Coding, Memo
    from stereoscope.tables import CSVTableWriter

    study, codes = coded_study["study"], coded_study["codes"]
    Code.objects.filter(pk=codes["leadership"].pk).update(name='+cmd, "x"')
    coding = Coding.objects.filter(output__study=study, start__isnull=False).order_by("pk").first()
    Coding.objects.filter(pk=coding.pk).update(quote='=HYPERLINK("x")')
    Memo.objects.create(study=study, author=coding.coder, coding=coding, text="@SUM(A1)\r\n\tnext")
    columns = [column.name for column in get_dataset("codings").columns]
    for escape in (True, False):
        path = tmp_path / f"codings-{escape}.zip"
        write_export(study, "csv", path, dataset_keys=["codings"], options={"escape_formulas": escape})
        with zipfile.ZipFile(path) as zf:
            written = zf.read("codings.csv").decode()
        reference = io.StringIO()
        writer = CSVTableWriter(reference, columns, escape=escape)
        for row in rows(study, "codings"):
            writer.write(row)
        assert written == reference.getvalue()
        assert ("'=HYPERLINK" in written) == escape and ("'+cmd" in written) == escape
        assert '"=HYPERLINK(""x"")' in written or '"\'=HYPERLINK(""x"")' in written


def test_codings_query_reads_story_fields_once_a_story_not_once_a_coding(coded_study):
    """The codings query reads the codings' own columns; a story's run, model, item and trial come from the one
    query over the coded stories (formatted once a story), not from a join repeated on every coding."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    study = coded_study["study"]
    with CaptureQueriesContext(connection) as queries:
        assert list(rows(study, "codings"))
    over_codings = [q["sql"] for q in queries if "ORDER BY" in q["sql"] and '"annotation_coding"."quote"' in q["sql"]]
    assert len(over_codings) == 1
    assert "generation_promptitem" not in over_codings[0] and '"model_name"' not in over_codings[0]


def test_a_story_coded_after_the_stories_were_read_is_read_when_asked_for(coded_study):
    """The codings query runs after the coded stories were read: a story coded in between (while an export runs)
    is read when a coding asks for it, with the same fields and subject gender as the others."""
    from annotation.datasets import _Stories
    from annotation.models import Coding
    from generation.models import Output

    study = coded_study["study"]
    coded = Output.objects.filter(pk__in=Coding.objects.filter(output__study=study).values("output_id"))
    everything = _Stories(coded)
    late = _Stories(coded.none())
    assert not late
    for pk, fields in everything.items():
        assert late[pk] == fields
    assert len(late) == len(everything) > 0
