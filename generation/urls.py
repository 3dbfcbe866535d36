from django.urls import include, path

from .runs import views_connections

# Toolkits (items, slots, versions, import/export) and runs (endpoints, runs, outputs) are built side by side.
urlpatterns = [
    path("", include("generation.toolkits.urls")),
    path("", include("generation.runs.urls")),
]

# Site-level pages (mounted under /settings/ by the project's URLs): provider connections, for site staff.
site_urlpatterns = [
    path("connections/", views_connections.connection_list, name="connections"),
    path("connections/new/", views_connections.connection_create, name="connection-create"),
    path("connections/<int:connection_id>/edit/", views_connections.connection_edit, name="connection-edit"),
    path("connections/<int:connection_id>/approve/", views_connections.connection_approve, name="connection-approve"),
    path("connections/<int:connection_id>/delete/", views_connections.connection_delete, name="connection-delete"),
]
