from django.contrib import admin

from .models import AppliedRecipe


@admin.register(AppliedRecipe)
class AppliedRecipeAdmin(admin.ModelAdmin):
    list_display = ["study", "sha256", "applied_by", "applied_at"]
    list_filter = ["study"]
    readonly_fields = ["study", "recipe", "sha256", "applied_by", "applied_at"]
