"""A URL configuration with the study list, the dashboard and the Measures pages only
(tests/stereoscope/test_navigation.py)."""

from django.urls import include, path

from stereoscope import views

urlpatterns = [
    path("studies/", views.study_list, name="study-list"),
    path("studies/<int:study_id>/", views.study_dashboard, name="study-dashboard"),
    path("studies/<int:study_id>/", include("measures.urls")),
]
