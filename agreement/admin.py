from django.contrib import admin

from .models import GoldLabel


@admin.register(GoldLabel)
class GoldLabelAdmin(admin.ModelAdmin):
    list_display = ["target", "output", "value", "decided_by", "updated_at"]
    list_filter = ["target"]
    raw_id_fields = ["output", "code"]
