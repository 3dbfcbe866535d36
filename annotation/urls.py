from django.urls import include, path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("coding/", section_placeholder("Coding", "Codebooks, assignments and the coding workspace."), name="coding"),
    path("", include("annotation.urls_agreement")),
]
