from django.contrib import admin
from django.core.exceptions import PermissionDenied

from .models import (
    Assignment,
    AssignmentPlan,
    Code,
    Codebook,
    CodeDiscovery,
    CodeOperation,
    CodeSuggestion,
    Coding,
    DiscoveryRequest,
    GenderAttribution,
    Memo,
    QueueProgress,
)


class CodeInline(admin.TabularInline):
    model = Code
    extra = 0
    fk_name = "codebook"
    fields = ["name", "parent", "codable", "gender_tag", "kind", "color", "shortcut", "order", "active"]
    raw_id_fields = ["parent"]


@admin.register(Codebook)
class CodebookAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "locked", "builtin_key", "created_at"]
    list_filter = ["study", "locked"]
    inlines = [CodeInline]


@admin.register(Code)
class CodeAdmin(admin.ModelAdmin):
    list_display = ["name", "codebook", "parent", "codable", "gender_tag", "kind", "active"]
    list_filter = ["codebook", "kind", "gender_tag", "active"]
    search_fields = ["name", "description"]
    raw_id_fields = ["parent", "merged_into", "item"]


@admin.register(Coding)
class CodingAdmin(admin.ModelAdmin):
    list_display = ["code", "output", "coder", "start", "end", "created_at"]
    list_filter = ["codebook"]
    raw_id_fields = ["output", "code"]


@admin.register(Memo)
class MemoAdmin(admin.ModelAdmin):
    list_display = ["author", "study", "coding", "code", "output", "created_at"]
    raw_id_fields = ["coding", "code", "output"]


@admin.register(CodeOperation)
class CodeOperationAdmin(admin.ModelAdmin):
    list_display = ["kind", "codebook", "actor", "created_at", "undone_at"]
    list_filter = ["kind"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["coder", "output", "codebook", "status", "mode", "created_at"]
    list_filter = ["status", "mode", "codebook"]
    raw_id_fields = ["output"]


@admin.register(AssignmentPlan)
class AssignmentPlanAdmin(admin.ModelAdmin):
    """What each planning of assignments asked for: a record, shown read-only (assignments point to it)."""

    list_display = ["codebook", "study", "k", "strategy", "mode", "sample_size", "seed", "created_at"]
    list_filter = ["mode", "strategy"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(QueueProgress)
class QueueProgressAdmin(admin.ModelAdmin):
    """Each coder's queue in two numbers, kept by database triggers: shown read-only."""

    list_display = ["coder", "codebook", "done", "total"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # True so that deleting a study or codebook in the admin may take its counts with it; a count on its own is
        # never deleted here (no delete action, and the delete page refuses), since the triggers keep it
        return True

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        raise PermissionDenied("Queue counts are kept by the database; they go with their codebook or study.")


@admin.register(GenderAttribution)
class GenderAttributionAdmin(admin.ModelAdmin):
    list_display = ["output", "coder", "gender", "created_at"]
    raw_id_fields = ["output"]


class CodeSuggestionInline(admin.TabularInline):
    model = CodeSuggestion
    extra = 0
    raw_id_fields = ["code"]


class DiscoveryRequestInline(admin.TabularInline):
    model = DiscoveryRequest
    extra = 0
    fields = ["number", "endpoint", "group", "status", "error", "provider_call"]
    raw_id_fields = ["provider_call"]


@admin.register(CodeDiscovery)
class CodeDiscoveryAdmin(admin.ModelAdmin):
    list_display = ["id", "codebook", "item", "execution_mode", "status", "created_at"]
    list_filter = ["status", "execution_mode"]
    filter_horizontal = ["endpoints"]
    inlines = [DiscoveryRequestInline, CodeSuggestionInline]


@admin.register(DiscoveryRequest)
class DiscoveryRequestAdmin(admin.ModelAdmin):
    list_display = ["discovery", "number", "endpoint", "group", "status", "finished_at"]
    list_filter = ["status"]
    raw_id_fields = ["discovery", "provider_call"]


@admin.register(CodeSuggestion)
class CodeSuggestionAdmin(admin.ModelAdmin):
    list_display = ["name", "discovery", "status", "gender_tag", "decided_at"]
    list_filter = ["status"]
    raw_id_fields = ["code"]
