from django.urls import path

from . import views

urlpatterns = [
    path("agreement/", views.agreement_report, name="agreement"),
    path("agreement/table/", views.agreement_table, name="agreement-table"),
    path("agreement/confusion/", views.agreement_confusion, name="agreement-confusion"),
    path("agreement/gold/", views.agreement_gold, name="agreement-gold"),
    path("agreement/export.csv", views.agreement_export, name="agreement-export"),
]
