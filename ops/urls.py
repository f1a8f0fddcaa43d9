from django.urls import path

from . import views

app_name = "ops"
urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics_view, name="metrics"),
    path("settings/notifications/", views.notification_settings, name="notifications"),
    path("slack/interactions", views.slack_interactions, name="slack_interactions"),
]
