from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("judging/", section_placeholder("Judging", "Cross-model judge rounds, detection rates and weights."), name="judging"),
]
