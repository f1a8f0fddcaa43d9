from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from remote.api import api

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("runs/", include("agents.urls")),
    path("", include("ops.urls")),
    path("", include("practice.urls")),
    path("", include("approvals.urls")),
]
