from django.contrib import admin

from .jobs.models import JobChunk
from .models import ActivityEvent, BuiltinRecord, Invitation, Membership, Study, WorkerHeartbeat


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "is_library", "created_by", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["study", "user", "role", "added_at"]
    list_filter = ["role", "study"]
    autocomplete_fields = ["user", "study"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["user", "study", "invited_by", "created_at", "accepted_at"]
    list_select_related = ["user", "study", "invited_by"]
    readonly_fields = ["user", "study", "invited_by", "created_at", "accepted_at"]


@admin.register(ActivityEvent)
class ActivityEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "study", "actor", "verb", "target"]
    list_filter = ["study"]


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["hostname", "pid", "broker", "started_at", "last_seen"]


@admin.register(BuiltinRecord)
class BuiltinRecordAdmin(admin.ModelAdmin):
    list_display = ["kind", "key", "version", "object_id", "loaded_at"]


@admin.register(JobChunk)
class JobChunkAdmin(admin.ModelAdmin):
    """Chunks of units that workers lease (read them to see which worker holds what)."""

    list_display = ["kind", "job_id", "number", "size", "done", "status", "worker", "lease_expires_at"]
    list_filter = ["kind", "status"]
