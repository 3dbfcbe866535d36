from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ObjectDoesNotExist

from .models import (
    Dimension,
    GenerationRun,
    ModelEndpoint,
    Output,
    PromptItem,
    ProviderBatch,
    ProviderCall,
    ProviderConnection,
    SpendingLedger,
    Toolkit,
)
from .toolkits.expansion import ToolkitLocked, count_text, effective_slots
from .toolkits.services import TOOLKITS
from .toolkits.slots import SlotError, normalize_combinations, normalize_slot_values


def _frozen(toolkit):
    """Locked (used by a run) or in the built-in library: the admin shows it read-only."""
    return toolkit is not None and toolkit.pk is not None and (toolkit.study.is_library or TOOLKITS.is_locked(toolkit))


class ToolkitAdminForm(forms.ModelForm):
    class Meta:
        model = Toolkit
        fields = "__all__"

    def clean_slots(self):
        try:
            return normalize_slot_values(self.cleaned_data.get("slots") or {}, "Slots")
        except SlotError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_combinations(self):
        try:
            return normalize_combinations(self.cleaned_data.get("combinations"), "Combinations")
        except SlotError as exc:
            raise forms.ValidationError(str(exc)) from None


class PromptItemAdminForm(forms.ModelForm):
    """Checks the item's slots against its toolkit (an unknown {slot} is an error naming the item)."""

    class Meta:
        model = PromptItem
        fields = "__all__"

    def clean(self):
        data = super().clean()
        try:
            toolkit = data.get("toolkit") or self.instance.toolkit
        except ObjectDoesNotExist:
            return data
        if toolkit is None or not data.get("text"):
            return data
        where = f"Item {data.get('number') or '?'}"
        try:
            slots, combos = effective_slots(
                toolkit.slots, toolkit.combinations, data.get("slots") or {}, data.get("combinations"), where
            )
            count_text(data["text"], slots, combos, where)
        except SlotError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data


class FrozenInlineMixin:
    def has_add_permission(self, request, obj=None):
        return not _frozen(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return not _frozen(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not _frozen(obj) and super().has_delete_permission(request, obj)


class DimensionInline(FrozenInlineMixin, admin.TabularInline):
    model = Dimension
    extra = 0


class PromptItemInline(FrozenInlineMixin, admin.StackedInline):
    model = PromptItem
    form = PromptItemAdminForm
    extra = 0
    fk_name = "toolkit"
    fields = [
        "number",
        "text",
        "dimension",
        "target_stereotype",
        "gender_mapping",
        "reversed_order",
        "source_reference",
        "notes",
        "slots",
        "combinations",
        "counterfactual_of",
    ]
    raw_id_fields = ["counterfactual_of"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "dimension":
            toolkit_id = request.resolver_match.kwargs.get("object_id") if request.resolver_match else None
            kwargs["queryset"] = (
                Dimension.objects.filter(toolkit_id=toolkit_id) if toolkit_id else Dimension.objects.none()
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(Toolkit)
class ToolkitAdmin(admin.ModelAdmin):
    """Locked toolkits (used by a run) and library built-ins open read-only; the action makes an editable version."""

    form = ToolkitAdminForm
    list_display = ["name", "version", "study", "is_locked", "item_count", "created_at"]
    list_filter = ["study", "locked"]
    search_fields = ["name", "description"]
    readonly_fields = ["locked", "parent", "builtin_key", "created_by", "created_at"]
    inlines = [DimensionInline, PromptItemInline]
    actions = ["make_new_version"]

    @admin.display(boolean=True, description="locked")
    def is_locked(self, obj):
        return _frozen(obj)

    @admin.display(description="items")
    def item_count(self, obj):
        return obj.items.count()

    def has_change_permission(self, request, obj=None):
        return not _frozen(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not _frozen(obj) and super().has_delete_permission(request, obj)

    @admin.action(description="Create a new editable version")
    def make_new_version(self, request, queryset):
        for toolkit in queryset:
            try:
                copy = TOOLKITS.new_version(toolkit, actor=request.user)
                self.message_user(request, f"Created {copy} (study {copy.study}).", messages.SUCCESS)
            except ToolkitLocked as exc:
                self.message_user(request, f"{toolkit}: {exc}", messages.ERROR)


@admin.register(Dimension)
class DimensionAdmin(admin.ModelAdmin):
    list_display = ["name", "toolkit", "order"]
    list_filter = ["toolkit__study"]

    def has_change_permission(self, request, obj=None):
        return not (obj and _frozen(obj.toolkit)) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not (obj and _frozen(obj.toolkit)) and super().has_delete_permission(request, obj)


@admin.register(PromptItem)
class PromptItemAdmin(admin.ModelAdmin):
    form = PromptItemAdminForm
    list_display = ["number", "toolkit", "dimension", "target_stereotype", "reversed_order"]
    list_filter = ["toolkit__study", "toolkit"]
    search_fields = ["text", "target_stereotype"]
    raw_id_fields = ["toolkit", "dimension", "counterfactual_of"]

    def has_change_permission(self, request, obj=None):
        return not (obj and _frozen(obj.toolkit)) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not (obj and _frozen(obj.toolkit)) and super().has_delete_permission(request, obj)


class ModelEndpointAdminForm(forms.ModelForm):
    """The admin validates endpoints like the pages and the API (key variable name, parameters, limits)."""

    class Meta:
        model = ModelEndpoint
        fields = "__all__"

    def clean(self):
        from .runs.endpoint_services import endpoint_problems

        data = super().clean()
        _, problems = endpoint_problems(dict(data), data.get("study"), self.instance if self.instance.pk else None)
        for field, message in problems.items():
            self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    form = ModelEndpointAdminForm
    list_display = ["name", "provider", "model_id", "study", "connection", "key_is_set"]
    list_filter = ["provider", "study", "connection"]

    @admin.display(boolean=True, description="key variable set")
    def key_is_set(self, obj):
        return obj.key_is_set

    def save_model(self, request, obj, form, change):
        from .runs.endpoint_services import save_endpoint

        data = {k: v for k, v in form.cleaned_data.items() if k != "study"}
        saved = save_endpoint(form.cleaned_data["study"], data, instance=obj if change else None, actor=request.user)
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        from .runs.endpoint_services import delete_endpoint

        delete_endpoint(obj, actor=request.user)


class ProviderConnectionAdminForm(forms.ModelForm):
    """Connections are validated like on the settings page (key variable allow-list, URL, limits)."""

    class Meta:
        model = ProviderConnection
        fields = [
            "name",
            "provider",
            "base_url",
            "api_key_env",
            "allowed_models",
            "max_concurrency",
            "requests_per_minute",
            "tokens_per_minute",
            "all_studies",
            "studies",
            "monthly_cap_usd",
        ]

    def clean(self):
        from .runs.connections import clean_connection

        data = super().clean()
        _, problems = clean_connection(dict(data), self.instance if self.instance.pk else None)
        for field, message in problems.items():
            self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(ProviderConnection)
class ProviderConnectionAdmin(admin.ModelAdmin):
    """Site staff decide where keys go: saving a connection here approves it (through the same service)."""

    form = ProviderConnectionAdminForm
    list_display = ["name", "provider", "base_url", "api_key_env", "status", "all_studies", "monthly_cap_usd"]
    list_filter = ["status", "provider"]
    actions = ["approve"]

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def save_model(self, request, obj, form, change):
        from .runs.connections import save_connection

        data = dict(form.cleaned_data)
        saved = save_connection(data, actor=request.user, instance=obj if change else None)
        obj.pk = saved.pk

    def save_related(self, request, form, formsets, change):
        pass  # the service set the studies

    def delete_model(self, request, obj):
        from .runs.connections import delete_connection

        delete_connection(obj, actor=request.user)

    @admin.action(description="Approve the selected connections")
    def approve(self, request, queryset):
        from .runs.connections import approve_connection

        for connection in queryset:
            approve_connection(connection, actor=request.user)


@admin.register(SpendingLedger)
class SpendingLedgerAdmin(admin.ModelAdmin):
    """Read-only: the ledger is written with each provider call."""

    list_display = [
        "study",
        "connection",
        "month",
        "calls",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "reserved_usd",
    ]
    list_filter = ["connection", "month"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(GenerationRun)
class GenerationRunAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "toolkit", "trials", "status", "created_at"]
    list_filter = ["status", "study"]


@admin.register(Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "model_name", "item", "trial", "status"]
    list_filter = ["status", "run"]
    search_fields = ["text"]
    raw_id_fields = ["run", "item", "endpoint"]


@admin.register(ProviderCall)
class ProviderCallAdmin(admin.ModelAdmin):
    list_display = ["started_at", "purpose", "provider", "model", "attempt", "ok", "http_status", "latency_ms"]
    list_filter = ["purpose", "ok", "provider"]
    raw_id_fields = ["output", "endpoint"]


@admin.register(ProviderBatch)
class ProviderBatchAdmin(admin.ModelAdmin):
    """Batches submitted to a provider's batch API (batch mode): one row per batch, found again by its id."""

    list_display = [
        "provider_batch_id",
        "job_kind",
        "job_id",
        "provider",
        "status",
        "request_count",
        "succeeded",
        "errored",
        "cost_usd",
    ]
    list_filter = ["provider", "status", "job_kind"]
    search_fields = ["provider_batch_id"]
