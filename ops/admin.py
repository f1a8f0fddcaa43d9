from django.contrib import admin

from approvals.auditors import AuditorsOnlyLook

from .models import NotificationPreference, SlackChannel, SlackIdentity


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(AuditorsOnlyLook, admin.ModelAdmin):
    list_display = ("user", "tool_name", "group", "browser", "email", "chat")
    list_filter = ("email", "chat", "browser")


@admin.register(SlackChannel)
class SlackChannelAdmin(AuditorsOnlyLook, admin.ModelAdmin):
    list_display = ("group", "channel_id")


@admin.register(SlackIdentity)
class SlackIdentityAdmin(AuditorsOnlyLook, admin.ModelAdmin):
    list_display = ("user", "slack_user_id")
