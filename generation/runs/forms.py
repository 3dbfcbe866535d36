"""Forms for endpoints, runs, manual answers and output imports. Validation lives in the services they call."""

import json

from django import forms

from ..models import ExecutionMode, ModelEndpoint, Provider
from . import connections
from .endpoint_services import CONNECTION_ONLY, EDITABLE
from .services import toolkits_for

ENDPOINT_FIELDS = [f for f in EDITABLE if f not in ("default_params", "provider")]


class EndpointForm(forms.Form):
    """Fields from the model; `save_endpoint` does the validation shared with the API. The connection is chosen
    among those open to the study; the provider kind follows it."""

    def __init__(self, *args, instance=None, study=None, **kwargs):
        initial = kwargs.pop("initial", None) or {}
        if instance is not None:
            initial = {f: getattr(instance, f) for f in EDITABLE}
            initial["connection"] = instance.connection_id
            initial["default_params"] = json.dumps(instance.default_params or {}, indent=1)
        super().__init__(*args, initial=initial, **kwargs)
        model_fields = forms.fields_for_model(ModelEndpoint, fields=[f for f in ENDPOINT_FIELDS if f != "connection"])
        model_fields["connection"] = forms.ModelChoiceField(
            queryset=connections.open_to(study) if study is not None else ModelEndpoint.objects.none(),
            label="Provider connection",
            help_text="Where calls go and with which key: site staff set these up under Site settings.",
            error_messages={"invalid_choice": "Choose one of the connections open to this study."},
        )
        for name in ENDPOINT_FIELDS:
            field = model_fields[name]
            if name not in ("name", "connection", "model_id", "max_concurrency", "max_attempts"):
                field.required = False
            self.fields[name] = field
            if name == "connection":
                self.fields["default_params"] = forms.CharField(
                    required=False,
                    label="Default parameters (JSON)",
                    widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"temperature": 0.7, "max_tokens": 600}'}),
                    help_text="temperature, top_p, max_tokens, seed, stop, top_k, presence_penalty, frequency_penalty",
                )

    def values(self):
        """The cleaned values, plus any connection-only field that was posted (the service refuses it)."""
        values = {k: v for k, v in self.cleaned_data.items()}
        values.update({f: self.data.get(f) for f in CONNECTION_ONLY if self.data.get(f)})
        return values


class RunForm(forms.Form):
    name = forms.CharField(max_length=200)
    toolkit = forms.ModelChoiceField(
        queryset=None,
        error_messages={"invalid_choice": "Unknown toolkit: choose one of this study or of the built-in library."},
    )
    endpoints = forms.ModelMultipleChoiceField(
        queryset=None,
        widget=forms.CheckboxSelectMultiple,
        error_messages={
            "invalid_choice": "Unknown endpoint %(value)s: choose endpoints of this study.",
            "required": "Choose at least one model endpoint.",
        },
    )
    trials = forms.IntegerField(
        min_value=1, max_value=1000, initial=1, help_text="Repetitions of every prompt per endpoint."
    )
    param_overrides = forms.CharField(
        required=False,
        label="Parameter overrides (JSON)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"temperature": 1.0}'}),
        help_text="Override the endpoints' defaults for this run; null removes a default.",
    )
    system_prompt = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional; sent as the system message of every fresh conversation.",
    )
    execution_mode = forms.ChoiceField(
        choices=ExecutionMode.choices,
        initial=ExecutionMode.LIVE,
        required=False,
        label="Execution mode",
        help_text="Batch mode needs endpoints that allow it; see the README.",
    )

    def __init__(self, *args, study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = toolkits_for(study).order_by("-study__is_library", "name", "-version")
        self.fields["toolkit"].label_from_instance = lambda t: (
            f"{t.name} v{t.version}"
            + (" (built-in library)" if t.study.is_library else "")
            + (" · locked" if t.locked else "")
        )
        self.fields["endpoints"].queryset = ModelEndpoint.objects.filter(study=study).order_by("name")
        self.fields["endpoints"].label_from_instance = lambda e: f"{e.name} · {e.get_provider_display()} · {e.model_id}"


FORMATS = [("", "From the file name"), ("csv", "CSV"), ("xlsx", "XLSX"), ("jsonl", "JSON Lines"), ("json", "JSON")]


class AnswerFileForm(forms.Form):
    file = forms.FileField(help_text="The collection sheet with the answer column filled in (CSV, XLSX or JSONL).")
    format = forms.ChoiceField(choices=FORMATS, required=False)


class OutputImportForm(forms.Form):
    file = forms.FileField(
        help_text="Columns: model, item or prompt, trial, slot:<name> or slot_values, text, external_id."
    )
    format = forms.ChoiceField(choices=FORMATS, required=False)
    run_name = forms.CharField(
        max_length=200, required=False, help_text="Name of the import run (default: the file name)."
    )
    toolkit = forms.ModelChoiceField(
        queryset=None,
        required=False,
        help_text="Match item numbers and prompts against it.",
        error_messages={"invalid_choice": "Unknown toolkit."},
    )

    def __init__(self, *args, study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["toolkit"].queryset = toolkits_for(study).order_by("-study__is_library", "name", "-version")
        self.fields["toolkit"].label_from_instance = lambda t: (
            f"{t.name} v{t.version}" + (" (built-in library)" if t.study.is_library else "")
        )


PROVIDER_HELP = {p.value: p.label for p in Provider}
