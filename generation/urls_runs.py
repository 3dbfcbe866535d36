from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("runs/", section_placeholder("Runs", "Generation runs over toolkits and model endpoints."), name="runs"),
]
