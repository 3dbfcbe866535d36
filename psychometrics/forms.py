from django import forms

from generation import selectors as generation
from generation.models import ExecutionMode
from stereoscope.untrusted import loads_json

from . import extraction, prompts
from .models import ContextSet


class InstrumentImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="Instrument JSON file.")
    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}), label="…or paste the JSON")

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload:
            if upload.size > 5_000_000:
                raise forms.ValidationError("The file is larger than 5 MB.")
            data["content"] = upload.read()
        elif data.get("text", "").strip():
            data["content"] = data["text"]
        else:
            raise forms.ValidationError("Choose a JSON file or paste its content.")
        return data


class PersonaImportForm(forms.Form):
    name = forms.CharField(max_length=200)
    file = forms.FileField(help_text='JSONL (one {"text": …} per line) or CSV with a text column.')

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > 20_000_000:
            raise forms.ValidationError("The file is larger than 20 MB.")
        return upload


class PersonaGenerateForm(forms.Form):
    name = forms.CharField(max_length=200)
    template = forms.CharField(max_length=500, initial="{title} {surname}")
    attributes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        initial='{"title": ["Mr.", "Ms."], "surname": ["Kim", "Garcia"]}',
        help_text="JSON object of attribute lists.",
    )


class ContextFromPersonasForm(forms.Form):
    name = forms.CharField(max_length=200)
    persona_set = forms.ModelChoiceField(queryset=None)
    n = forms.IntegerField(required=False, min_value=1, label="Sample size (empty = all)")
    seed = forms.IntegerField(initial=0)

    def __init__(self, *args, persona_sets=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["persona_set"].queryset = persona_sets


class ContextImportForm(forms.Form):
    name = forms.CharField(max_length=200)
    file = forms.FileField(
        help_text='JSONL: {"key", "persona"?, "turns": [{"role": "user", "content": …}, …]} per line.'
    )
    n = forms.IntegerField(required=False, min_value=1, label="Sample size (empty = all)")
    seed = forms.IntegerField(initial=0)


class RunForm(forms.Form):
    name = forms.CharField(max_length=200)
    instrument = forms.ModelChoiceField(queryset=None)
    context_set = forms.ModelChoiceField(
        queryset=None,
        required=False,
        empty_label="No context (bare: each item in a fresh chat)",
        help_text="No context asks every item with no persona and no prior turns.",
    )
    endpoints = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple)
    repetitions = forms.IntegerField(initial=1, min_value=1, max_value=100)
    seeds = forms.CharField(
        required=False,
        help_text="Optional: one provider seed per repetition, e.g. '1, 2, 3' "
        "(R.U.Psycho's seed grid). Empty: the endpoint's seed.",
    )
    template_key = forms.ChoiceField(
        choices=[(k, t.name) for k, t in prompts.TEMPLATES.items()] + [("custom", "Custom")], label="Prompt template"
    )
    custom_system = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Custom only. Placeholders: {persona}, {instruction}.",
    )
    custom_user = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Custom only. Needs {statement}; {options} lists the answer options.",
    )
    option_format = forms.ChoiceField(
        choices=[("lines", "one per line"), ("comma", "comma-separated")], initial="lines"
    )
    option_order = forms.ChoiceField(choices=[(m, m) for m in prompts.ORDER_MODES], initial="fixed")
    option_numbering = forms.ChoiceField(
        choices=[
            ("position", "codes by position (answer mapped back)"),
            ("original", "each option keeps its scale value"),
        ],
        initial="position",
    )
    order_seed = forms.IntegerField(initial=0)
    extractors = forms.CharField(
        initial="number", help_text=f"Comma-separated chain from {', '.join(extraction.EXTRACTORS)}."
    )
    judge_endpoint = forms.ModelChoiceField(
        queryset=None,
        required=False,
        label="Judge endpoint",
        help_text="With 'llm' last in the chain: this model reads the answers the "
        "rules leave inconclusive or not present.",
    )
    refusal_policy = forms.ChoiceField(
        choices=[("fallback", "refused only when no option is found"), ("strict", "any refusal phrase → refused")]
    )
    json_field = forms.CharField(initial="answer", max_length=50)
    param_overrides = forms.CharField(required=False, initial='{"temperature": 0}', help_text="JSON object.")
    audit_per_model = forms.IntegerField(initial=100, min_value=0)
    execution_mode = forms.ChoiceField(
        choices=ExecutionMode.choices,
        initial=ExecutionMode.LIVE,
        required=False,
        label="Execution mode",
        help_text="Batch mode needs endpoints that allow it.",
    )

    def __init__(self, *args, instruments=None, study=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["instrument"].queryset = instruments
        self.fields["context_set"].queryset = ContextSet.objects.filter(study=study)
        self.fields["endpoints"].queryset = generation.study_endpoints(study)
        self.fields["judge_endpoint"].queryset = generation.study_endpoints(study)

    def clean_extractors(self):
        chain = [c.strip() for c in self.cleaned_data["extractors"].split(",") if c.strip()]
        try:
            return extraction.validate_chain(chain)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_param_overrides(self):
        text = self.cleaned_data.get("param_overrides") or ""
        if not text.strip():
            return {}
        try:
            value = loads_json(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("Must be a JSON object.")
        return value


class ContextGenerationForm(forms.Form):
    """Texts (e.g. Jung's reference letters) generated in every context of a set: each unit is context × prompt."""

    name = forms.CharField(max_length=200)
    toolkit = forms.ModelChoiceField(queryset=None)
    endpoints = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple)
    trials = forms.IntegerField(initial=1, min_value=1, max_value=100)

    def __init__(self, *args, study=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = generation.toolkits_for(study)
        self.fields["endpoints"].queryset = generation.study_endpoints(study)


class RunFileForm(forms.Form):
    file = forms.FileField(help_text="A run file exported from Stereoscope.")
    name = forms.CharField(max_length=200, required=False, help_text="Optional new name.")
