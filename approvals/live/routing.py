from django.urls import path, re_path

from approvals.live import consumers

websocket_urlpatterns = [
    path("ws/queue/", consumers.QueueConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only; Channels routes ASGI apps
    path("ws/runs/<int:run_id>/", consumers.RunConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only; Channels routes ASGI apps
    # last: every other path is refused, not an error
    re_path(r".*", consumers.NotFoundConsumer.as_asgi()),  # type: ignore[arg-type]  # stubs: views only; Channels routes ASGI apps
]
