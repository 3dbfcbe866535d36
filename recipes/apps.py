from django.apps import AppConfig


class RecipesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "recipes"
    verbose_name = "Recipes (a study as code)"

    def manifest_sections(self, study):
        """Every export's manifest embeds the recipe that rebuilds its study (`manage.py recipe apply`)."""
        from .exporting import export_recipe

        try:
            return {"recipe": export_recipe(study)}
        except ValueError as exc:
            return {"recipe": None, "recipe_problem": str(exc)}
