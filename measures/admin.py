from django.contrib import admin

from .models import (
    ContrastResult,
    Lexicon,
    LexiconCategory,
    LexiconExclusion,
    MeasureRun,
    OutputMeasure,
    TrainedClassifier,
    WordCounts,
)


class CategoryInline(admin.TabularInline):
    model = LexiconCategory
    extra = 0
    fields = ["order", "key", "name", "direction", "language", "match_mode", "color", "words"]


class ExclusionInline(admin.TabularInline):
    model = LexiconExclusion
    extra = 0
    fields = ["phrase", "is_regex", "category", "note"]


@admin.register(Lexicon)
class LexiconAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "locked", "count_policy", "builtin_key"]
    list_filter = ["locked", "count_policy"]
    search_fields = ["name"]
    inlines = [CategoryInline, ExclusionInline]


@admin.register(LexiconCategory)
class LexiconCategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "lexicon", "direction", "match_mode", "language"]
    list_filter = ["direction", "match_mode"]


@admin.register(LexiconExclusion)
class LexiconExclusionAdmin(admin.ModelAdmin):
    list_display = ["phrase", "is_regex", "lexicon", "category"]


@admin.register(MeasureRun)
class MeasureRunAdmin(admin.ModelAdmin):
    list_display = ["name", "study", "classifier", "classifier_unit", "status", "created_at"]
    list_filter = ["status", "classifier"]
    readonly_fields = ["classifier_info", "progress", "lease_token", "lease_expires_at"]


@admin.register(OutputMeasure)
class OutputMeasureAdmin(admin.ModelAdmin):
    list_display = ["run", "output", "gender", "gender_source", "word_count", "sentence_count", "doc_label"]
    list_filter = ["gender", "gender_source"]
    raw_id_fields = ["output", "run"]


@admin.register(WordCounts)
class WordCountsAdmin(admin.ModelAdmin):
    list_display = ["run", "gender"]
    list_filter = ["gender"]
    raw_id_fields = ["run"]


@admin.register(ContrastResult)
class ContrastResultAdmin(admin.ModelAdmin):
    list_display = ["run", "kind", "measure", "grouping", "group", "created_at"]
    list_filter = ["kind", "grouping"]


@admin.register(TrainedClassifier)
class TrainedClassifierAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "features", "k", "seed", "created_at"]
    readonly_fields = ["labels", "training_data", "folds", "metrics", "library_versions"]
    exclude = ["model_blob"]
