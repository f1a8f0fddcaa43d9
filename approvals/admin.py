from django.contrib import admin

from . import rules_admin  # noqa: F401  (policy rules, tool settings, shadow results)
from .models import AuditEvent, Decision, Message, Run, ToolCall


class ReadOnlyAdmin(admin.ModelAdmin):
    """The record is written by the application only."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["id", "agent", "status", "requested_by", "step_count", "created_at"]
    list_filter = ["status", "agent"]
    search_fields = ["=id", "request"]


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    list_display = ["id", "tool_name", "tier", "status", "run", "created_at"]
    list_filter = ["tool_name", "tier", "status"]
    search_fields = ["=id", "=run__id", "description"]
    list_select_related = ["run"]


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["id", "tool_call", "verdict", "reviewer", "created_at"]
    list_filter = ["verdict"]
    list_select_related = ["tool_call", "reviewer"]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "seq", "role"]
    list_select_related = ["run"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "actor_label", "run", "tool_call", "created_at"]
    list_filter = ["kind"]
    list_select_related = ["run", "tool_call"]

