from django.urls import path

from . import views as v

T = "toolkits/<int:toolkit_id>/"
urlpatterns = [
    path("toolkits/", v.toolkit_list, name="toolkits"),
    path("toolkits/import/", v.toolkit_import, name="toolkit-import"),
    path("toolkits/copy/<int:toolkit_id>/", v.toolkit_copy, name="toolkit-copy"),
    path(T, v.toolkit_detail, name="toolkit-detail"),
    path(T + "edit/", v.toolkit_edit, name="toolkit-edit"),
    path(T + "delete/", v.toolkit_delete, name="toolkit-delete"),
    path(T + "new-version/", v.toolkit_new_version, name="toolkit-new-version"),
    path(T + "preview/", v.toolkit_preview, name="toolkit-preview"),
    path(T + "export.<str:fmt>", v.toolkit_export, name="toolkit-export"),
    path(T + "slots/add/", v.slot_add, name="toolkit-slot-add"),
    path(T + "slots/json/", v.slots_json, name="toolkit-slots-json"),
    path(T + "slots/<str:name>/remove/", v.slot_remove, name="toolkit-slot-remove"),
    path(T + "dimensions/add/", v.dimension_add, name="toolkit-dimension-add"),
    path(T + "dimensions/<int:dimension_id>/edit/", v.dimension_edit, name="toolkit-dimension-edit"),
    path(T + "dimensions/<int:dimension_id>/delete/", v.dimension_delete, name="toolkit-dimension-delete"),
    path(T + "dimensions/<int:dimension_id>/move/<str:direction>/", v.dimension_move, name="toolkit-dimension-move"),
    path(T + "items/add/", v.item_add, name="toolkit-item-add"),
    path(T + "items/<int:item_id>/edit/", v.item_edit, name="toolkit-item-edit"),
    path(T + "items/<int:item_id>/delete/", v.item_delete, name="toolkit-item-delete"),
    path(T + "items/<int:item_id>/twin/", v.item_twin, name="toolkit-item-twin"),
    path(T + "items/<int:item_id>/move/<str:direction>/", v.item_move, name="toolkit-item-move"),
]
