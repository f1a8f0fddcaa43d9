"""What the gateway writes and reads, keyword-only, each write atomic: the upstreams' tools kept in step with the
gateway agent's declared tools, and reviewed calls opened once per client request and finished once.

A reviewed call is an ordinary remote call of the gateway's agent (remote.services.call_propose), so a retry of
the same request finds it by its idempotency key; an approved one is claimed with the execution key (exactly
one caller wins) before the upstream is called, and reported after.
"""

import hashlib
import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from approvals import audit, live
from approvals.lib.hashing import canonical_json
from approvals.models import Tier, ToolCall
from approvals.tools import DECISIONS
from remote import services as remote_services
from remote.models import RemoteAgent

from .models import Gateway, GatewayCall, Upstream, UpstreamTool, environment_entries
from .upstreams import UpstreamSpec

log = logging.getLogger(__name__)

HINTS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@dataclass(frozen=True)
class Entry:
    """A listed tool as the gateway serves it."""

    upstream: str
    name: str
    description: str
    input_schema: dict
    annotations: dict
    tier: str
    facts_tool: str
    facts_arguments: tuple[str, ...]


def gateway_get(*, name: str) -> Gateway:
    return Gateway.objects.select_related("agent").get(agent__name=name)


@transaction.atomic
def gateway_create(*, name: str) -> Gateway:
    agent, _ = remote_services.agent_get_or_create(name=name)
    gateway, _ = Gateway.objects.get_or_create(agent=agent)
    return gateway


def upstream_specs(*, gateway: Gateway) -> list[UpstreamSpec]:
    rows = gateway.upstreams.filter(enabled=True).order_by("name")
    specs = []
    for row in rows:
        try:
            environment = tuple(environment_entries(row.environment))
        except ValueError as exc:  # saved around the admin's check: not started with an environment it cannot read
            log.warning("MCP upstream %s is not started: its environment: %s", row, exc)
            continue
        specs.append(UpstreamSpec(row.pk, row.name, row.command.strip(), row.url.strip(), environment))
    return specs


def tool_declare(*, tool: UpstreamTool) -> None:
    """Declare this tool for the gateway's agent as the admin set it (a new version when that changed)."""
    agent = tool.upstream.gateway.agent
    declaration = {
        "description": tool.description,
        "input_schema": tool.input_schema,
        "tier": tool.tier,
        "description_template": tool.description_template,
        "decisions": list(DECISIONS),
        "key_fields": [],
    }
    try:
        remote_services.tool_declare(agent=agent, name=tool.name, declaration=declaration)
        problem = ""
    except remote_services.Invalid as exc:
        problem = str(exc)
    if problem != tool.problem:
        UpstreamTool.objects.filter(pk=tool.pk).update(problem=problem)
        tool.problem = problem


def _store_listing(upstream: Upstream, listed: list[dict]) -> list[UpstreamTool]:
    names = []
    for item in listed:
        annotations = {key: value for key, value in (item.get("annotations") or {}).items() if key in HINTS}
        tool, _ = UpstreamTool.objects.update_or_create(
            upstream=upstream,
            name=item["name"],
            defaults={
                "description": item.get("description") or "",
                "input_schema": item.get("inputSchema") or {"type": "object"},
                "annotations": annotations,
                "listed": True,
            },
        )
        names.append(tool.name)
    upstream.tools.exclude(name__in=names).update(listed=False)
    return list(upstream.tools.filter(listed=True).select_related("upstream__gateway__agent"))


@transaction.atomic
def tools_sync(*, gateway: Gateway, listings: dict[int, list[dict]]) -> None:
    """What each upstream listed now (by its pk) becomes its stored tools, each declared for the gateway's agent."""
    for upstream in gateway.upstreams.filter(pk__in=listings):
        for tool in _store_listing(upstream, listings[upstream.pk]):
            tool_declare(tool=tool)


def catalog(*, gateway: Gateway) -> dict[str, Entry]:
    """The tools the gateway lists, by name: listed, declared, not forbidden; the first upstream's on a clash."""
    tools = list(
        UpstreamTool.objects.filter(upstream__gateway=gateway, upstream__enabled=True, listed=True, problem="")
        .select_related("upstream")
        .order_by("upstream__name", "name")
    )
    schemas = {(tool.upstream_id, tool.name): tool for tool in tools}
    entries: dict[str, Entry] = {}
    for tool in tools:
        if tool.tier == Tier.FORBIDDEN or tool.name in entries:
            continue
        facts = schemas.get((tool.upstream_id, tool.facts_tool)) if tool.facts_tool else None
        shared = ()
        if facts is not None and facts.tier == Tier.READ_ONLY:
            props = facts.input_schema.get("properties") or {}
            shared = tuple(name for name in (tool.input_schema.get("properties") or {}) if name in props)
        entries[tool.name] = Entry(
            upstream=tool.upstream.name,
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=tool.annotations,
            tier=tool.tier,
            facts_tool=facts.name if facts is not None and facts.tier == Tier.READ_ONLY else "",
            facts_arguments=shared,
        )
    return entries


def request_key(*, gateway: str, tool: str, arguments: dict, key: str = "") -> str:
    """The same tool and arguments through the same gateway identity (and the client's own key, when it sends
    one) give the same key, whatever the transport or client: one pending call, never two to approve."""
    body = canonical_json({"gateway": gateway, "tool": tool, "arguments": arguments, "key": key})
    return hashlib.sha256(body.encode()).hexdigest()


def call_find(*, gateway: Gateway, key: str) -> ToolCall | None:
    """The call this request made before whose outcome no client has had yet: a retry waits on it again."""
    found = GatewayCall.objects.filter(gateway=gateway, request_key=key, answered_at__isnull=True).first()
    return found.tool_call if found is not None else None


@transaction.atomic
def call_open(*, gateway: Gateway, key: str, proposal: dict) -> ToolCall:
    """The pending (or decided, unanswered) call of this request, or a new one proposed for review."""
    RemoteAgent.objects.select_for_update().get(pk=gateway.agent_id)  # one request key, one call
    existing = call_find(gateway=gateway, key=key)
    if existing is not None:
        return existing
    generation = GatewayCall.objects.filter(gateway=gateway, request_key=key).count()
    proposal = proposal | {"idempotency_key": f"mcp-{key[:48]}-{generation}"}
    call, _ = remote_services.call_propose(agent=gateway.agent, proposal=proposal)
    GatewayCall.objects.create(tool_call=call, gateway=gateway, request_key=key)
    return call


def call_read(*, call_id: int) -> ToolCall:
    return ToolCall.objects.select_related("gateway", "remote__tool").get(pk=call_id)


def call_claim(*, gateway: Gateway, call_id: int) -> bool:
    """Take the approved call for execution: exactly one caller (process, retry) wins."""
    call = ToolCall.objects.get(pk=call_id)
    key = remote_services.execution_key(call)
    won, _ = remote_services.call_claim(agent=gateway.agent, call_id=call_id, key=key)
    return won


def call_renew(*, gateway: Gateway, call_id: int) -> None:
    """Renew the gateway's claim while the upstream runs; ApiError (409) once it lapsed."""
    call = ToolCall.objects.get(pk=call_id)
    remote_services.call_lease_renew(agent=gateway.agent, call_id=call_id, key=remote_services.execution_key(call))


@transaction.atomic
def call_finish(*, gateway: Gateway, call_id: int, result: dict, ok: bool, output: str) -> None:
    """Keep what the upstream answered (a retry gets the same) and report it to the trail."""
    call = ToolCall.objects.get(pk=call_id)
    GatewayCall.objects.filter(pk=call_id).update(result=result)
    key = remote_services.execution_key(call)
    remote_services.call_report(agent=gateway.agent, call_id=call_id, key=key, ok=ok, output=output)


@transaction.atomic
def call_withdraw(*, gateway: Gateway, call_id: int) -> bool:
    """The client cancelled its task (MCP's tasks/cancel) before anyone decided: the call leaves the queue."""
    withdrawn = ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.PENDING, gateway__gateway=gateway)
    if not withdrawn.update(status=ToolCall.Status.CANCELLED):
        return False
    call = ToolCall.objects.get(pk=call_id)
    payload = {"withdrawn_by": "the MCP client that asked (tasks/cancel)"}
    audit.record(audit.AuditEvent.Kind.CANCELLED, tool_call=call, actor=gateway.agent.user, payload=payload)
    live.call_changed(call_id)
    live.run_changed(call.run_id)
    return True


def call_answered(*, call_id: int) -> None:
    """Its outcome reached a client: the same request again is a new call."""
    GatewayCall.objects.filter(pk=call_id, answered_at__isnull=True).update(answered_at=timezone.now())


def call_link(call: ToolCall) -> str:
    return remote_services.call_url(call)
