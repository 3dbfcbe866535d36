from django.contrib import admin

from .models import Dimension, GenerationRun, ModelEndpoint, Output, PromptItem, ProviderCall, Toolkit


class DimensionInline(admin.TabularInline):
    model = Dimension
    extra = 0


class PromptItemInline(admin.StackedInline):
    model = PromptItem
    extra = 0
    fields = ["number", "text", "dimension", "target_stereotype", "gender_mapping", "reversed_order", "source_reference", "notes", "slots"]


@admin.register(Toolkit)
class ToolkitAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "locked", "created_at"]
    list_filter = ["study", "locked"]
    inlines = [DimensionInline, PromptItemInline]


@admin.register(Dimension)
class DimensionAdmin(admin.ModelAdmin):
    list_display = ["name", "toolkit", "order"]


@admin.register(PromptItem)
class PromptItemAdmin(admin.ModelAdmin):
    list_display = ["number", "toolkit", "dimension", "target_stereotype", "reversed_order"]
    list_filter = ["toolkit"]
    search_fields = ["text", "target_stereotype"]


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "model_id", "study", "api_key_env", "key_is_set"]
    list_filter = ["provider", "study"]

    @admin.display(boolean=True, description="key variable set")
    def key_is_set(self, obj):
        return obj.key_is_set


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
