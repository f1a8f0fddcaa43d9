"""The gateways' admin: each gateway's upstream MCP servers, and per tool its tier, template and facts."""

from asgiref.sync import async_to_sync
from django.contrib import admin, messages

from approvals.admin.filters import RefuseUnstorableQuery

from . import services
from .models import Gateway, Upstream, UpstreamTool
from .upstreams import Upstreams


async def _refresh(gateway: Gateway) -> int:
    from asgiref.sync import sync_to_async

    specs = await sync_to_async(services.upstream_specs)(gateway=gateway)
    async with Upstreams(specs) as upstreams:
        listings = await upstreams.listings()
    await sync_to_async(services.tools_sync)(gateway=gateway, listings=listings)
    return len(listings)


class UpstreamInline(admin.TabularInline):
    model = Upstream
    extra = 0
    fields = ["name", "command", "url", "environment", "enabled"]


@admin.register(Gateway)
class GatewayAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    list_display = ["__str__", "answer_after_seconds"]
    inlines = [UpstreamInline]
    actions = ["refresh"]

    @admin.action(description="Refresh the tools their upstream servers list", permissions=["change"])
    def refresh(self, request, queryset):
        for gateway in queryset.select_related("agent"):
            reached = async_to_sync(_refresh)(gateway)
            total = gateway.upstreams.filter(enabled=True).count()
            level = messages.SUCCESS if reached == total else messages.WARNING
            self.message_user(request, f"{gateway}: {reached} of {total} upstream servers answered.", level)


class UpstreamToolInline(admin.TabularInline):
    model = UpstreamTool
    extra = 0
    can_delete = False
    fields = ["name", "annotations", "setting", "description_template", "facts_tool", "listed", "problem"]
    readonly_fields = ["name", "annotations", "listed", "problem"]

    def has_add_permission(self, request, obj=None):
        return False  # tools come from the upstream's own listing


@admin.register(Upstream)
class UpstreamAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    list_display = ["name", "gateway", "command", "url", "enabled"]
    list_filter = ["gateway"]
    inlines = [UpstreamToolInline]

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        for tool in formset.queryset.select_related("upstream__gateway__agent"):
            services.tool_declare(tool=tool)  # a changed tier or template is the declared tool's next version
