from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("toolkits/", section_placeholder("Toolkits", "Prompt toolkits: dimensions, items, slots."), name="toolkits"),
]
