from django.urls import path

from .views import calls, insight, questions, queue, runs, turns

app_name = "approvals"

urlpatterns = [
    path("", queue.queue, name="queue"),
    path("approve-selected/", queue.approve_selected, name="approve_selected"),
    path("queue/group/", queue.queue_group, name="queue_group"),
    path("calls/<int:pk>/", calls.call_detail, name="call"),
    path("calls/<int:pk>/preview/", calls.call_preview, name="call_preview"),
    path("calls/<int:pk>/approve/", calls.call_approve, name="call_approve"),
    path("calls/<int:pk>/edit/", calls.call_edit, name="call_edit"),
    path("calls/<int:pk>/changes/", calls.call_changes, name="call_changes"),
    path("calls/<int:pk>/reject/", calls.call_reject, name="call_reject"),
    path("calls/<int:pk>/respond/", calls.call_respond, name="call_respond"),
    path("calls/<int:pk>/answer/", questions.call_answer, name="call_answer"),
    path("calls/<int:pk>/claim/", calls.call_claim, name="call_claim"),
    path("calls/<int:pk>/settle/", calls.call_settle, name="call_settle"),
    path("calls/<int:pk>/release/", calls.call_release, name="call_release"),
    path("calls/<int:pk>/turn/", turns.turn_decide, name="turn_decide"),
    path("runs/<int:pk>/", runs.run_detail, name="run"),
    path("runs/<int:pk>/retry/", runs.run_retry, name="run_retry"),
    path("runs/<int:pk>/cancel/", runs.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/calls/<int:call_pk>/undo/", runs.call_undo, name="call_undo"),
    path("insight/", insight.insight_page, name="insight"),
    path("insight/rules/add/", insight.insight_rule_add, name="insight_rule_add"),
]
