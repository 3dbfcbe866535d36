from django.contrib import admin

from .models import ExportJob


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "study", "format", "status", "size_bytes", "created_by", "created_at", "finished_at"]
    list_filter = ["format", "status", "study"]
    readonly_fields = [f.name for f in ExportJob._meta.fields]
