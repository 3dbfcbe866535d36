from django.urls import include, path

# Toolkits (items, slots, versions, import/export) and runs (endpoints, runs, outputs) are built side by side.
urlpatterns = [
    path("", include("generation.urls_toolkits")),
    path("", include("generation.urls_runs")),
]
