from django import forms

from .models import Role, Study


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(
        required=False, label="E-mail",
        help_text="For a person without an account: it is created with a one-time invitation link.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.CODER)
