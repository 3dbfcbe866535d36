from django.urls import path

from stereoscope.views import section_placeholder

urlpatterns = [
    path("questionnaires/", section_placeholder("Questionnaires", "Instruments, personas, questionnaire runs."), name="questionnaires"),
]
