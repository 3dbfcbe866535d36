from django.urls import path

from . import views, views_variables

urlpatterns = [
    path("agreement/", views.agreement_report, name="agreement"),
    path("agreement/table/", views.agreement_table, name="agreement-table"),
    path("agreement/confusion/", views.agreement_confusion, name="agreement-confusion"),
    path("agreement/gold/", views.agreement_gold, name="agreement-gold"),
    path("agreement/export.csv", views.agreement_export, name="agreement-export"),
    path("agreement/variables/", views_variables.variable_list, name="agreement-variables"),
    path("agreement/variables/<int:variable_id>/", views_variables.variable_detail, name="agreement-variable"),
    path(
        "agreement/variables/<int:variable_id>/download/",
        views_variables.variable_download,
        name="agreement-variable-download",
    ),
    path("agreement/variables/<int:variable_id>/gold/", views_variables.variable_gold, name="agreement-variable-gold"),
    path(
        "agreement/variables/<int:variable_id>/gold-rule/",
        views_variables.variable_gold_rule,
        name="agreement-variable-gold-rule",
    ),
]
