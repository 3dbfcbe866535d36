from django import forms

from generation.models import ExecutionMode
from stereoscope.untrusted import whole_numbers

from .models import JudgePolicy, TemplateKind
from .rounds import judge_choices, runs_for, templates_for


class JudgeTemplateForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=TemplateKind.choices, initial=TemplateKind.CUSTOM)
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14}),
        help_text="Needs {target_stereotype} and {stories}. Also known: {n_stories}, {story_ids}, "
        "{scale_min}, {scale_max}, {answer_example}.",
    )
    scale_min = forms.IntegerField(initial=0)
    scale_max = forms.IntegerField(initial=1)
    detect_threshold = forms.IntegerField(initial=1, help_text="Values at or above this count as detected.")
    labels = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Categorical templates: the labels, comma-separated (e.g. female, male, both, "
        "unclear); also the {labels} placeholder.",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class JudgeRoundForm(forms.Form):
    name = forms.CharField(max_length=200)
    source_run = forms.ModelChoiceField(queryset=None, help_text="The generation run whose outputs are judged.")
    template = forms.ModelChoiceField(queryset=None)
    judges = forms.ModelMultipleChoiceField(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        help_text="Endpoints serving the same model count as one judge.",
    )
    policy = forms.ChoiceField(choices=JudgePolicy.choices, initial=JudgePolicy.ROTATION)
    k = forms.IntegerField(required=False, min_value=1, help_text="Judges per output (k-of-n only).")
    forbid_same_family = forms.BooleanField(required=False, label="Forbid judges of the writer's provider family")
    batch_size = forms.IntegerField(initial=5, min_value=1, max_value=50, help_text="Stories per call (the seed: 5).")
    temperature = forms.FloatField(required=False, min_value=0, max_value=2)
    seed = forms.IntegerField(initial=0, help_text="Seeds the assignment and the order of stories in each batch.")
    reask_missing = forms.BooleanField(required=False, initial=True, label="Re-ask missing/unparseable stories alone")
    execution_mode = forms.ChoiceField(
        choices=ExecutionMode.choices,
        initial=ExecutionMode.LIVE,
        required=False,
        label="Execution mode",
        help_text="Batch mode needs judges that allow it.",
    )
    item_numbers = forms.CharField(required=False, help_text="Optional: only these prompt items, e.g. 1, 4, 17.")
    models = forms.CharField(
        required=False, help_text="Optional: only outputs written by these models, comma-separated."
    )

    def __init__(self, study, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source_run"].queryset = runs_for(study)
        self.fields["template"].queryset = templates_for(study).order_by("name", "-version")
        self.fields["judges"].queryset = judge_choices(study)

    def clean_item_numbers(self):
        raw = self.cleaned_data.get("item_numbers") or ""
        parts = [p.strip() for p in raw.replace(";", ",").split(",") if p.strip()]
        numbers = whole_numbers(parts)
        if len(numbers) < len(parts) or 0 in numbers:
            raise forms.ValidationError("List item numbers separated by commas, e.g. 1, 4, 17.")
        return numbers

    def clean_models(self):
        return [m.strip() for m in (self.cleaned_data.get("models") or "").split(",") if m.strip()]


class VerificationForm(forms.Form):
    coders = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple)
    sample_size = forms.IntegerField(min_value=1, initial=20)
    seed = forms.IntegerField(initial=0)

    def __init__(self, coders, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["coders"].queryset = coders


class WeightsImportForm(forms.Form):
    toolkit = forms.ModelChoiceField(queryset=None, help_text="The version the weights were computed on.")
    file = forms.FileField(help_text="A weights JSON or CSV exported from Stereoscope.")
    drop_flagged = forms.BooleanField(required=False, label="Leave flagged prompts out of the new version")

    def __init__(self, toolkits, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = toolkits
