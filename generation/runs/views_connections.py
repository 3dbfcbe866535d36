"""Pages for provider connections (site staff, under Site settings) and a study's spending. Thin: the work is done
in `connections` and `spending`."""

from decimal import Decimal

from django import forms
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from stereoscope.models import Role, Study
from stereoscope.permissions import has_role, study_role_required

from ..models import Provider, ProviderConnection
from . import connections, spending


class ConnectionForm(forms.Form):
    name = forms.CharField(max_length=200)
    provider = forms.ChoiceField(choices=Provider.choices)
    base_url = forms.CharField(
        required=False,
        label="Base URL",
        help_text="Empty: the provider's official host. For OpenAI-compatible servers, e.g. http://localhost:8000/v1",
    )
    api_key_env = forms.CharField(
        required=False,
        label="Key variable",
        help_text="The NAME of the environment variable holding the key (listed in PROVIDER_KEY_VARIABLES).",
    )
    allowed_models = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="One model id per line; empty: any."
    )
    max_concurrency = forms.IntegerField(required=False, min_value=1, label="Concurrent calls (all endpoints)")
    requests_per_minute = forms.IntegerField(required=False, min_value=1)
    tokens_per_minute = forms.IntegerField(required=False, min_value=1)
    all_studies = forms.BooleanField(required=False, initial=True, label="Open to every study")
    studies = forms.ModelMultipleChoiceField(
        queryset=Study.objects.filter(is_library=False), required=False, help_text="When not open to every study."
    )
    monthly_cap_usd = forms.DecimalField(required=False, min_value=0, label="Monthly cap (USD, all studies)")

    def __init__(self, *args, instance=None, **kwargs):
        if instance is not None:
            kwargs.setdefault(
                "initial",
                {
                    **{f: getattr(instance, f) for f in connections.EDITABLE if f not in ("studies", "allowed_models")},
                    "allowed_models": "\n".join(instance.allowed_models or []),
                    "studies": list(instance.studies.all()),
                },
            )
        super().__init__(*args, **kwargs)


def _connection_form(request, instance=None):
    form = ConnectionForm(request.POST or None, instance=instance)
    if request.method == "POST" and form.is_valid():
        try:
            connection = connections.save_connection(form.cleaned_data, actor=request.user, instance=instance)
        except connections.ConnectionError as exc:
            for field, message in exc.problems.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(request, f"Connection “{connection.name}” saved and approved.")
            return redirect("connections")
    return render(
        request,
        "generation/connection_form.html",
        {"form": form, "connection": instance},
        status=400 if form.errors else 200,
    )


@staff_member_required
def connection_list(request):
    rows = ProviderConnection.objects.prefetch_related("studies").order_by("status", "name")
    return render(
        request,
        "generation/connection_list.html",
        {"connections": rows, "form": ConnectionForm() if request.method == "GET" else None},
    )


@staff_member_required
def connection_create(request):
    return _connection_form(request)


@staff_member_required
def connection_edit(request, connection_id):
    return _connection_form(request, get_object_or_404(ProviderConnection, pk=connection_id))


@staff_member_required
@require_POST
def connection_approve(request, connection_id):
    connection = connections.approve_connection(
        get_object_or_404(ProviderConnection, pk=connection_id), actor=request.user
    )
    messages.success(request, f"Connection “{connection.name}” approved; runs waiting for it go on.")
    return redirect("connections")


@staff_member_required
@require_POST
def connection_delete(request, connection_id):
    connection = get_object_or_404(ProviderConnection, pk=connection_id)
    try:
        connections.delete_connection(connection, actor=request.user)
    except connections.ConnectionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Connection “{connection.name}” deleted.")
    return redirect("connections")


# -- spending -------------------------------------------------------------------------------------------------------


def spending_chart(by_month, width=640, height=180):
    """Bars of spending per month, as SVG data (rendered by the template with a title per bar)."""
    if not by_month:
        return None
    top = max((row["cost_usd"] for row in by_month), default=Decimal(0)) or Decimal(1)
    gap, left, bottom = 8, 60, 24
    bar = max(8, min(60, (width - left) // max(1, len(by_month)) - gap))
    bars = []
    for i, row in enumerate(by_month):
        h = int((height - bottom - 10) * float(row["cost_usd"] / top))
        bars.append(
            {
                "x": left + i * (bar + gap),
                "y": height - bottom - h,
                "w": bar,
                "h": h,
                "label": f"{row['month']:%Y-%m}",
                "value": f"${row['cost_usd'].quantize(Decimal('0.01'))}",
            }
        )
    return {"width": width, "height": height, "bars": bars, "top": f"${top.quantize(Decimal('0.01'))}", "left": left}


@study_role_required(Role.RESEARCHER)
def study_spending(request, study_id):
    study = request.study
    can_set = has_role(request.user, study, Role.ADMIN)
    if request.method == "POST":
        if "cap_limit" in request.POST:
            try:
                spending.set_study_cap_limit(study, request.POST.get("cap_limit"), actor=request.user)
                messages.success(request, "The study's cap limit is saved.")
            except spending.CapError as exc:
                messages.error(request, str(exc))
        else:
            try:
                amount = spending.set_study_cap(study, request.POST.get("cap"), actor=request.user)
                messages.success(
                    request, f"Spending cap set to ${amount}." if amount is not None else "Spending cap removed."
                )
            except spending.CapError as exc:
                messages.error(request, str(exc))
                data = spending.study_spending(study)
                return render(
                    request,
                    "generation/spending.html",
                    {"study": study, "data": data, "chart": spending_chart(data["by_month"]), "can_set": can_set},
                    status=400,
                )
        return redirect("study-spending", study.pk)
    data = spending.study_spending(study)
    return render(
        request,
        "generation/spending.html",
        {"study": study, "data": data, "chart": spending_chart(data["by_month"]), "can_set": can_set},
    )
