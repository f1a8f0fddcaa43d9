from django.urls import path

from . import views

app_name = "practice"

urlpatterns = [
    path("insight/catch-rate/", views.catch_rate, name="catch_rate"),
    path("insight/catch-rate.csv", views.catch_rate_csv, name="catch_rate_csv"),
]
