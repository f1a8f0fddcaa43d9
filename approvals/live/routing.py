from django.urls import path, re_path

from approvals.live import consumers

websocket_urlpatterns = [
    path("ws/queue/", consumers.QueueConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", consumers.RunConsumer.as_asgi()),
    re_path(r".*", consumers.NotFoundConsumer.as_asgi()),  # last: every other path is refused, not an error
]
