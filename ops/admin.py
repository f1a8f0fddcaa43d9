from django.contrib import admin

from .models import NotificationPreference, SlackChannel, SlackIdentity


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "tool_name", "group", "browser", "email", "chat")
    list_filter = ("email", "chat", "browser")


@admin.register(SlackChannel)
class SlackChannelAdmin(admin.ModelAdmin):
    list_display = ("group", "channel_id")


@admin.register(SlackIdentity)
class SlackIdentityAdmin(admin.ModelAdmin):
    list_display = ("user", "slack_user_id")
