from django.contrib import admin

from .models import HumanCheck, ItemWeight, JudgeRound, JudgeTemplate, Verdict, VerificationRequest


@admin.register(JudgeTemplate)
class JudgeTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "kind", "study", "locked", "builtin_key"]
    list_filter = ["kind", "study", "locked"]


@admin.register(JudgeRound)
class JudgeRoundAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "policy", "status", "created_at"]
    list_filter = ["status", "policy", "study"]
    filter_horizontal = ["judges"]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ["round", "output", "judge_model", "value", "status"]
    list_filter = ["status", "round"]
    raw_id_fields = ["output", "judge_endpoint"]


@admin.register(HumanCheck)
class HumanCheckAdmin(admin.ModelAdmin):
    list_display = ["verdict", "user", "value", "created_at"]
    raw_id_fields = ["verdict"]


@admin.register(VerificationRequest)
class VerificationRequestAdmin(admin.ModelAdmin):
    list_display = ["verdict", "coder", "requested_by", "created_at"]
    raw_id_fields = ["verdict"]


@admin.register(ItemWeight)
class ItemWeightAdmin(admin.ModelAdmin):
    list_display = ["toolkit", "item", "weight", "rate", "method", "created_at"]
    list_filter = ["toolkit"]
    raw_id_fields = ["item"]
