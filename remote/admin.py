"""The admin of remote agents: identities, tokens (by prefix; revoke), declared tools, webhooks and their log."""

from django import forms
from django.contrib import admin, messages

from approvals import access
from approvals.admin.filters import RefuseUnstorableQuery
from approvals.admin.readonly import ReadOnly

from . import services, targets
from .models import AgentToken, DeclaredTool, RemoteAgent, Webhook, WebhookDelivery
from .tokens import token_revoke


class RecordOfAgents(ReadOnly, RefuseUnstorableQuery, admin.ModelAdmin):
    """The record of what agents did: read only here (a token is revoked, not deleted)."""


@admin.register(RemoteAgent)
class RemoteAgentAdmin(RecordOfAgents):
    list_display = ["name", "user", "created_at"]
    search_fields = ["name"]


@admin.register(AgentToken)
class AgentTokenAdmin(RecordOfAgents):
    list_display = ["prefix", "agent", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["agent", "revoked_at"]
    fields = ["prefix", "agent", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_revoke_permission(self, request):
        return access.can_revoke_tokens(request.user)

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request, queryset):
        for token in queryset:
            token_revoke(token=token)
        messages.info(request, f"Revoked {queryset.count()} token(s); they are refused from now on.")


@admin.register(DeclaredTool)
class DeclaredToolAdmin(RecordOfAgents):
    list_display = ["name", "agent", "version", "current", "tier", "created_at"]
    list_filter = ["agent", "tier", "current"]
    search_fields = ["name"]


class WebhookForm(forms.ModelForm):
    class Meta:
        model = Webhook
        fields = ["agent", "url", "active"]

    def clean_url(self):
        url = self.cleaned_data["url"]
        if self.instance.pk is None:
            try:
                targets.resolve(url)
            except targets.TargetRefused as exc:
                raise forms.ValidationError(str(exc))
        return url


@admin.register(Webhook)
class WebhookAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    form = WebhookForm
    list_display = ["url", "agent", "active", "created_at"]
    list_filter = ["agent", "active"]

    def get_readonly_fields(self, request, obj=None):
        return ["agent", "url"] if obj else []

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        hook, secret = services.webhook_create(agent=obj.agent, url=obj.url)
        obj.pk, obj.secret, obj.created_at = hook.pk, hook.secret, hook.created_at
        messages.warning(request, f"The signing secret of this webhook, shown once: {secret}")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(RecordOfAgents):
    list_display = ["message_id", "webhook", "tool_call", "status", "attempts", "last_status_code", "next_attempt_at"]
    list_filter = ["status", "webhook__agent"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    actions = ["redeliver"]

    def has_redeliver_permission(self, request):
        return access.can_redeliver_webhooks(request.user)

    @admin.action(description="Redeliver the selected deliveries", permissions=["redeliver"])
    def redeliver(self, request, queryset):
        for delivery in queryset:
            services.delivery_redeliver(delivery=delivery)
        messages.info(request, f"{queryset.count()} delivery(ies) will be sent again now.")
