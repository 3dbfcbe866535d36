from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("measures/", section_placeholder("Measures", "Lexicons, classifiers and gender contrasts."), name="measures"),
]
