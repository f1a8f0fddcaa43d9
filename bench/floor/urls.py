from django.urls import include, path

from . import views

urlpatterns = [
    path("api/v1/calls", views.propose),
    path("api/v1/calls/<int:call_id>", views.read),
    path("", include("reviewhub.urls")),
]
