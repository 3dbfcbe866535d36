"""Forms for endpoints, runs, manual answers and output imports. Validation lives in the services they call."""
import json

from django import forms

from .endpoint_services import EDITABLE
from .models import ExecutionMode, ModelEndpoint, Provider
from .runs import toolkits_for

ENDPOINT_FIELDS = [f for f in EDITABLE if f != "default_params"]


class EndpointForm(forms.Form):
    """Fields from the model; `save_endpoint` does the validation shared with the API."""

    def __init__(self, *args, instance=None, **kwargs):
        initial = kwargs.pop("initial", None) or {}
        if instance is not None:
            initial = {f: getattr(instance, f) for f in EDITABLE}
            initial["default_params"] = json.dumps(instance.default_params or {}, indent=1)
        super().__init__(*args, initial=initial, **kwargs)
        model_fields = forms.fields_for_model(ModelEndpoint, fields=[f for f in ENDPOINT_FIELDS if f != "base_url"])
        model_fields["base_url"] = None
        for name in ENDPOINT_FIELDS:
            field = model_fields[name] or forms.CharField()
            if name not in ("name", "provider", "model_id", "max_concurrency", "max_attempts"):
                field.required = False
            self.fields[name] = field
            if name == "provider":
                self.fields["default_params"] = forms.CharField(
                    required=False, label="Default parameters (JSON)",
                    widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"temperature": 0.7, "max_tokens": 600}'}),
                    help_text="temperature, top_p, max_tokens, seed, stop, top_k, presence_penalty, frequency_penalty")
        self.fields["base_url"] = forms.CharField(required=False, label="Base URL",
                                                  help_text="For OpenAI-compatible servers, e.g. http://localhost:8000/v1")
        self.fields["api_key_env"].label = "Key variable name"
        self.fields["api_key_env"].widget.attrs["autocomplete"] = "off"

    def values(self):
        return {k: v for k, v in self.cleaned_data.items()}


class RunForm(forms.Form):
    name = forms.CharField(max_length=200)
    toolkit = forms.ModelChoiceField(queryset=None, error_messages={
        "invalid_choice": "Unknown toolkit: choose one of this study or of the built-in library."})
    endpoints = forms.ModelMultipleChoiceField(queryset=None, widget=forms.CheckboxSelectMultiple, error_messages={
        "invalid_choice": "Unknown endpoint %(value)s: choose endpoints of this study.",
        "required": "Choose at least one model endpoint."})
    trials = forms.IntegerField(min_value=1, max_value=1000, initial=1, help_text="Repetitions of every prompt per endpoint.")
    param_overrides = forms.CharField(required=False, label="Parameter overrides (JSON)",
                                      widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"temperature": 1.0}'}),
                                      help_text="Override the endpoints' defaults for this run; null removes a default.")
    system_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                    help_text="Optional; sent as the system message of every fresh conversation.")
    execution_mode = forms.ChoiceField(choices=ExecutionMode.choices, initial=ExecutionMode.LIVE, required=False,
                                       label="Execution mode",
                                       help_text="Batch mode needs endpoints that allow it; see the README.")

    def __init__(self, *args, study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = toolkits_for(study).order_by("-study__is_library", "name", "-version")
        self.fields["toolkit"].label_from_instance = lambda t: (
            f"{t.name} v{t.version}" + (" (built-in library)" if t.study.is_library else "") + (" · locked" if t.locked else ""))
        self.fields["endpoints"].queryset = ModelEndpoint.objects.filter(study=study).order_by("name")
        self.fields["endpoints"].label_from_instance = lambda e: f"{e.name} · {e.get_provider_display()} · {e.model_id}"


FORMATS = [("", "From the file name"), ("csv", "CSV"), ("xlsx", "XLSX"), ("jsonl", "JSON Lines"), ("json", "JSON")]


class AnswerFileForm(forms.Form):
    file = forms.FileField(help_text="The collection sheet with the answer column filled in (CSV, XLSX or JSONL).")
    format = forms.ChoiceField(choices=FORMATS, required=False)


class OutputImportForm(forms.Form):
    file = forms.FileField(help_text="Columns: model, item or prompt, trial, slot:<name> or slot_values, text, external_id.")
    format = forms.ChoiceField(choices=FORMATS, required=False)
    run_name = forms.CharField(max_length=200, required=False, help_text="Name of the import run (default: the file name).")
    toolkit = forms.ModelChoiceField(queryset=None, required=False, help_text="Match item numbers and prompts against it.",
                                     error_messages={"invalid_choice": "Unknown toolkit."})

    def __init__(self, *args, study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = toolkits_for(study).order_by("-study__is_library", "name", "-version")
        self.fields["toolkit"].label_from_instance = lambda t: f"{t.name} v{t.version}" + (
            " (built-in library)" if t.study.is_library else "")


PROVIDER_HELP = {p.value: p.label for p in Provider}
