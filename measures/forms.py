import re

from django import forms

from generation import selectors as generation
from stereoscope.untrusted import loads_json

from .lexical import COUNT_POLICIES, OR_CONVENTIONS
from .models import ClassifierKind, ClassifierUnit, Direction, LexiconCategory, MatchMode, TrainedClassifier
from .services import lexicons_for

MAX_IMPORT_BYTES = 2 * 1024 * 1024


class LexiconForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    count_policy = forms.ChoiceField(choices=[(p, p.replace("_", " ")) for p in COUNT_POLICIES], initial="per_token")


class LexiconImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="A lexicon JSON file (the export format).")
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False, label="or paste JSON")

    def clean(self):
        upload, text = self.cleaned_data.get("file"), self.cleaned_data.get("text")
        if upload:
            if upload.size > MAX_IMPORT_BYTES:
                raise forms.ValidationError("The file is larger than 2 MB.")
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if not (text or "").strip():
            raise forms.ValidationError("Choose a file or paste the JSON.")
        try:
            self.cleaned_data["data"] = loads_json(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}.") from None
        return self.cleaned_data


class CategoryForm(forms.Form):
    name = forms.CharField(max_length=200)
    key = forms.CharField(max_length=60, required=False, help_text="Lower-case id; made from the name when blank.")
    direction = forms.ChoiceField(choices=Direction.choices, initial=Direction.NONE)
    match_mode = forms.ChoiceField(choices=MatchMode.choices, initial=MatchMode.PREFIX)
    language = forms.CharField(max_length=10, required=False, initial="en", help_text="Blank: any language.")
    color = forms.CharField(max_length=7, initial="#4c6ef5", widget=forms.TextInput(attrs={"type": "color"}))
    words = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10}),
        required=False,
        help_text="One entry per line (or comma-separated). Order and duplicates are kept.",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    source = forms.CharField(max_length=300, required=False)

    @classmethod
    def initial_for(cls, category: LexiconCategory):
        return {
            "name": category.name,
            "key": category.key,
            "direction": category.direction,
            "match_mode": category.match_mode,
            "language": category.language,
            "color": category.color,
            "words": "\n".join(category.words),
            "description": category.description,
            "source": category.source,
        }

    def data_for_service(self):
        d = dict(self.cleaned_data)
        d["mode"] = d.pop("match_mode")
        return d


class ExclusionForm(forms.Form):
    phrase = forms.CharField(max_length=300, help_text="A false match to drop, e.g. Babylon or not aggressive.")
    is_regex = forms.BooleanField(required=False, label="Regular expression")
    category = forms.ModelChoiceField(
        queryset=LexiconCategory.objects.none(), required=False, empty_label="All categories"
    )
    note = forms.CharField(max_length=300, required=False)

    def __init__(self, *args, lexicon=None, **kwargs):
        super().__init__(*args, **kwargs)
        if lexicon is not None:
            self.fields["category"].queryset = lexicon.categories.all()


class PreviewForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=20000)


def parse_name_genders(text):
    """'Anna=F, Paul=M' → {"Anna": "F", "Paul": "M"}; ValueError with a clear message."""
    names = {}
    for chunk in re.split(r"[,;\n]+", text or ""):
        chunk = chunk.strip()
        if not chunk:
            continue
        parts = [p.strip() for p in chunk.split("=")]
        if len(parts) != 2 or parts[1].upper() not in ("F", "M") or not parts[0]:
            raise ValueError(f"{chunk!r} is not of the form Name=F or Name=M.")
        names[parts[0]] = parts[1].upper()
    return names


class MeasureRunForm(forms.Form):
    name = forms.CharField(max_length=200)
    lexicons = forms.ModelMultipleChoiceField(queryset=None, required=False, widget=forms.CheckboxSelectMultiple)
    source_runs = forms.ModelMultipleChoiceField(
        queryset=None,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every finished output of the study.",
    )
    classifier = forms.ChoiceField(choices=ClassifierKind.choices, required=False)
    classifier_unit = forms.ChoiceField(choices=ClassifierUnit.choices, initial=ClassifierUnit.SENTENCE)
    classifier_path = forms.CharField(
        max_length=500, required=False, help_text="transformers only: the model folder on the server."
    )
    classifier_model_id = forms.CharField(
        max_length=300, required=False, help_text="transformers only: its name, e.g. sasha/regardv3."
    )
    trained_classifier = forms.ModelChoiceField(
        queryset=None, required=False, help_text="trained only: a classifier trained on gold labels here."
    )
    zero_policy = forms.ChoiceField(
        choices=[("exclude", "exclude (no OR when a count is zero)"), ("smooth", "smooth (+0.5 to every cell)")],
        initial="exclude",
    )
    or_orientation = forms.ChoiceField(
        choices=list(OR_CONVENTIONS.items()), initial="per_category", required=False, label="Odds-ratio orientation"
    )
    success_filter = forms.BooleanField(
        required=False,
        help_text="Measure only successful generations: non-empty, not repetitive, with a keyword (Wan et al. 2023).",
    )
    success_keywords = forms.CharField(
        required=False,
        initial="recommend",
        help_text="Success filter keywords, comma-separated (matched at a word start).",
    )
    nli_path = forms.CharField(
        max_length=500,
        required=False,
        label="NLI model folder",
        help_text="Hallucination measure: a local NLI model's folder on the server.",
    )
    nli_model_id = forms.CharField(
        max_length=300,
        required=False,
        label="NLI model name",
        help_text="e.g. ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli",
    )
    context_slot = forms.CharField(
        max_length=100, required=False, help_text="Hallucination measure: the slot holding each letter's biography."
    )
    gender_sources = forms.CharField(
        initial="slots, coders, pronouns", help_text="Sources of the subject's gender, in order."
    )
    name_genders = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Extra given names, e.g. Anna=F, Paul=M (Kelly/Joseph and other defaults are known).",
    )

    def __init__(self, *args, study=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["lexicons"].queryset = lexicons_for(study).order_by("-study__is_library", "name", "-version")
        self.fields["source_runs"].queryset = generation.study_runs(study)
        self.fields["trained_classifier"].queryset = TrainedClassifier.objects.filter(study=study)

    def clean_gender_sources(self):
        sources = [s.strip() for s in re.split(r"[,\s]+", self.cleaned_data["gender_sources"]) if s.strip()]
        bad = [s for s in sources if s not in ("slots", "coders", "pronouns")]
        if bad or not sources:
            raise forms.ValidationError("Use slots, coders and pronouns, in your order of preference.")
        return sources

    def clean_or_orientation(self):
        return self.cleaned_data["or_orientation"] or "per_category"

    def clean_success_keywords(self):
        return [k.strip() for k in re.split(r"[,\n]+", self.cleaned_data["success_keywords"] or "") if k.strip()]

    def clean_name_genders(self):
        try:
            return parse_name_genders(self.cleaned_data["name_genders"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
