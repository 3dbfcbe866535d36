from django.urls import path

from . import views

urlpatterns = [
    path("recipe/", views.recipe_page, name="recipe"),
    path("recipe/download.yaml", views.recipe_download, name="recipe-download"),
    path("recipe/apply/", views.recipe_apply, name="recipe-apply"),
    path("recipe/applied/", views.recipe_applied, name="recipe-applied"),
]
