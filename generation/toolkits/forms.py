"""Forms for the toolkit pages. JSON fields are parsed here with a clear message; services do the rest."""

import json

from django import forms

from stereoscope.untrusted import loads_json

from ..models import Dimension

MAX_UPLOAD_BYTES = 5 * 1024 * 1024


def parse_json_field(text, label, empty):
    text = (text or "").strip()
    if not text:
        return empty
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(
            f"{label} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from None


def json_text(value):
    return "" if value in (None, {}, []) else json.dumps(value, ensure_ascii=False)


class ToolkitForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    language = forms.CharField(max_length=10, initial="en", required=False)


class DimensionForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class SlotForm(forms.Form):
    slot_name = forms.CharField(max_length=100, label="Slot name", help_text="Used in item texts as {name}.")
    values = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), help_text="One value per line.")


class SlotsJsonForm(forms.Form):
    slots = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text='Object of value lists, e.g. {"age": ["20", "40", "60"]}.',
    )
    combinations = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='Optional list of fixed combinations, e.g. [{"name": "Kelly", "gender": "female"}]; '
        "empty = Cartesian product.",
    )

    def clean_slots(self):
        return parse_json_field(self.cleaned_data["slots"], "Slots", {})

    def clean_combinations(self):
        return parse_json_field(self.cleaned_data["combinations"], "Combinations", None)


class ItemForm(forms.Form):
    number = forms.IntegerField(min_value=1, required=False, help_text="Empty = next free number.")
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), help_text="Write {slot} for a slot, {{ and }} for braces."
    )
    dimension = forms.ModelChoiceField(queryset=Dimension.objects.none(), required=False)
    target_stereotype = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    gender_mapping = forms.CharField(
        max_length=300, required=False, help_text="e.g. F = protected/sheltered, M = challenged/tested"
    )
    reversed_order = forms.BooleanField(required=False, label="Counterbalanced / reversed order")
    source_reference = forms.CharField(max_length=300, required=False)
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    slots = forms.CharField(
        required=False,
        label="Item slots (JSON)",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional; override the toolkit's slot values for this item.",
    )
    combinations = forms.CharField(
        required=False, label="Item combinations (JSON)", widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args, toolkit, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dimension"].queryset = toolkit.dimensions.order_by("order", "name")

    @classmethod
    def initial_for(cls, item):
        return {
            "number": item.number,
            "text": item.text,
            "dimension": item.dimension_id,
            "target_stereotype": item.target_stereotype,
            "gender_mapping": item.gender_mapping,
            "reversed_order": item.reversed_order,
            "source_reference": item.source_reference,
            "notes": item.notes,
            "slots": json_text(item.slots),
            "combinations": json_text(item.combinations),
        }

    def clean_slots(self):
        return parse_json_field(self.cleaned_data["slots"], "Item slots", {})

    def clean_combinations(self):
        return parse_json_field(self.cleaned_data["combinations"], "Item combinations", None)


class TwinForm(forms.Form):
    name_pairs = forms.CharField(
        required=False,
        max_length=500,
        label="Name pairs",
        help_text="Optional, e.g. Kelly=Joseph, Anna=Paul; empty = the default list.",
    )


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A .json or .csv toolkit file (UTF-8).")
    format = forms.ChoiceField(choices=[("", "from the file name"), ("json", "JSON"), ("csv", "CSV")], required=False)
    name = forms.CharField(max_length=200, required=False, help_text="Optional; overrides the name in the file.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.")
        return upload
