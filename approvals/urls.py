from django.urls import path

from . import views

app_name = "approvals"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("calls/<int:pk>/", views.call_detail, name="call"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/action/", views.run_action, name="run_action"),
    path("insight/", views.insight_page, name="insight"),
]
