"""`study_report --format pdf` (the `report` extra: WeasyPrint with Debian's Pango): the PDF's text, read back with
pypdf, holds the methods paragraph and the seed's Table 3."""

import re

import pytest
from django.core.management import call_command


def _weasyprint_or_skip():
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as exc:
        pytest.skip(f"needs the `report` extra (WeasyPrint + Pango): {exc}")
    return pytest.importorskip("pypdf", reason="needs the `report` extra (pypdf reads the PDF back)")


def test_pdf_has_the_methods_paragraph_and_table3(fang_study, tmp_path):
    pypdf = _weasyprint_or_skip()
    out = tmp_path / "report.pdf"
    call_command("study_report", str(fang_study.pk), "--format", "pdf", "--output", str(out))
    assert out.read_bytes().startswith(b"%PDF")
    text = " ".join(page.extract_text() for page in pypdf.PdfReader(str(out)).pages)
    text = re.sub(r"\s+", " ", text)
    assert "Methods" in text
    assert "“Phase 3 stories” asked 3 prompts × 5 trials × 2 models" in text
    assert "Table 3 of the seed: detection rates by dimension and model" in text
    assert "fake-writer-1" in text and "Overall" in text
    assert not re.search(r"\b(nan|NaN|inf)\b", text)


@pytest.fixture
def without_weasyprint(monkeypatch):
    """WeasyPrint looks uninstalled: importing it raises ImportError, as without the `report` extra."""
    import builtins

    real_import = builtins.__import__

    def no_weasyprint(name, *args, **kwargs):
        if name.split(".")[0] == "weasyprint":
            raise ImportError("No module named 'weasyprint'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_weasyprint)


def test_pdf_without_the_extra_says_which_extra(without_weasyprint, roles):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=r"the `report` extra"):
        call_command("study_report", str(roles["a"].pk), "--format", "pdf", "--output", "unused.pdf")
