from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("coding/", section_placeholder("Coding", "Codebooks, assignments and the coding workspace."), name="coding"),
]
