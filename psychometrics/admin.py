from django.contrib import admin

from .models import (
    Context,
    ContextSet,
    ExtractionAudit,
    Instrument,
    InstrumentItem,
    Persona,
    PersonaSet,
    QuestionnaireRun,
    Response,
)


class InstrumentItemInline(admin.TabularInline):
    model = InstrumentItem
    extra = 0
    fields = ["item_id", "position", "text", "subscale", "reverse", "parallel"]
    raw_id_fields = ["parallel"]


@admin.register(Instrument)
class InstrumentAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "scale_min", "scale_max", "continuous", "locked", "builtin_key"]
    list_filter = ["locked", "continuous"]
    search_fields = ["name", "builtin_key"]
    inlines = [InstrumentItemInline]
    raw_id_fields = ["parallel_of", "parent"]


@admin.register(PersonaSet)
class PersonaSetAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "template", "builtin_key"]
    search_fields = ["name"]


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    list_display = ["key", "text", "persona_set", "included"]
    list_filter = ["included"]
    search_fields = ["text", "key"]
    raw_id_fields = ["persona_set", "twin"]


@admin.register(ContextSet)
class ContextSetAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "source", "seed"]


@admin.register(Context)
class ContextAdmin(admin.ModelAdmin):
    list_display = ["key", "context_set", "persona", "included"]
    list_filter = ["included"]
    raw_id_fields = ["context_set", "source_persona", "twin"]


@admin.register(QuestionnaireRun)
class QuestionnaireRunAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "instrument", "context_set", "option_order", "status", "created_at"]
    list_filter = ["status", "option_order"]
    readonly_fields = ["progress", "lease_token", "lease_expires_at"]


@admin.register(ExtractionAudit)
class ExtractionAuditAdmin(admin.ModelAdmin):
    list_display = ["response", "user", "correct", "corrected_value", "created_at"]
    raw_id_fields = ["response"]


@admin.register(InstrumentItem)
class InstrumentItemAdmin(admin.ModelAdmin):
    list_display = ["item_id", "instrument", "subscale", "reverse"]
    raw_id_fields = ["instrument", "parallel"]


@admin.register(Response)
class QuestionnaireResponseAdmin(admin.ModelAdmin):
    list_display = ["run", "model_name", "context", "item", "repetition", "status", "extraction", "value"]
    list_filter = ["status", "extraction"]
    raw_id_fields = ["run", "item", "context", "endpoint"]
    list_select_related = ["run", "context", "item"]
