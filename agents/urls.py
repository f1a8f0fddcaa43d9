from django.urls import path

from . import views

app_name = "agents"

urlpatterns = [
    path("", views.runs, name="runs"),
    path("new/", views.new_run, name="new_run"),
]
