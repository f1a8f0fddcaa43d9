"""Who gets what from every URL and socket route: one table, checked by
test_url_access.py (HTTP, the admin included) and test_socket_access.py (sockets).

The routes are read from the URL configuration and approvals/live/routing.py, so a
route added without a row here fails those tests, naming the route.
"""

import re
from dataclasses import dataclass, field
from decimal import Decimal

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.shortcuts import resolve_url
from django.urls import URLResolver, get_resolver, reverse

from approvals import services
from approvals.live.routing import websocket_urlpatterns
from approvals.models import PolicyRule, Run, ToolCall, ToolSetting, TurnRule, TurnShadow
from ops.models import NotificationPreference, SlackChannel, SlackIdentity
from shop import demo_data
from shop.models import Order, OutgoingEmail, Refund

from .reviewing import NOTE_CALL, REFUND_CALL, run_with

# The roles, in the order of every row below:
# anonymous: not logged in. oscar: logged in, no permission. alice: a reviewer in "senior", the group the
# refund tool is restricted to. bob: a reviewer outside it. rita: requested the run (and is a reviewer).
# audrey: the auditor (staff, reads the record). root: a superuser.
ROLES = ("anonymous", "oscar", "alice", "bob", "rita", "audrey", "root")

GET, POST, FORM, WS = (
    "GET",
    "POST",
    "FORM",
    "WS",
)  # POST: POST only (GET answers 405); FORM: a page that posts to itself
LOGIN, ADMIN_LOGIN = "→ login", "→ admin login"  # a redirect to the login page, or to the admin's
OPEN, SHUT = "open", "refused"  # a socket accepted, or closed before it opened

EMAIL = ("send_email", {"to": "dana.smith@example.com", "subject": "Your order", "body": "It has shipped."})


def admin_page(audrey, root, method=GET) -> tuple:
    """An admin page: whoever is not staff is sent to the admin's login."""
    return (method, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, audrey, root)


# fmt: off
# 200: shown. 302: done, then back to a page (a form without JavaScript). 403: may see it, may not do it.
# 404: may not see it. Every POST also carries the data its form sends (see build_world).
EXPECTED = {
    # route                               method anonymous oscar  alice  bob    rita   audrey root
    "login":                              (GET,  200,      200,   200,   200,   200,   200,   200),
    "logout":                             (POST, LOGIN,    LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN),
    "agents:runs":                        (GET,  LOGIN,    200,   200,   200,   200,   200,   200),
    "agents:new_run":                     (FORM, LOGIN,    302,   302,   302,   302,   403,   302),
    "approvals:queue":                    (GET,  LOGIN,    200,   200,   200,   200,   200,   200),
    # a group of similar calls: each sees only the calls they may decide (none, for who may decide nothing)
    "approvals:queue_group":              (GET,  LOGIN,    200,   200,   200,   200,   200,   200),
    # bob and rita: back to the queue with "#n was not approved: <why>" for the refund
    "approvals:approve_selected":         (POST, LOGIN,    403,   302,   302,   302,   403,   302),
    "approvals:call":                     (GET,  LOGIN,    404,   200,   404,   200,   200,   200),
    "approvals:call_preview":             (GET,  LOGIN,    404,   200,   404,   200,   200,   200),
    "approvals:call_approve":             (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    "approvals:call_edit":                (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    "approvals:call_changes":             (POST, LOGIN,    404,   200,   404,   403,   403,   200),
    "approvals:call_reject":              (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    "approvals:call_respond":             (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    # the refund asks no question: whoever may decide it is told to approve or reject it instead
    "approvals:call_answer":              (POST, LOGIN,    404,   403,   404,   403,   403,   403),
    "approvals:call_claim":               (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    "approvals:call_release":             (POST, LOGIN,    404,   302,   404,   302,   403,   302),
    # the world's refund is pending, its outcome known: whoever may settle calls of its group is told 409
    "approvals:call_settle":              (POST, LOGIN,    404,   409,   404,   403,   403,   409),
    # the world's call is a refund, not a held model turn: whoever may decide it is told so
    "approvals:turn_decide":              (POST, LOGIN,    404,   403,   404,   403,   403,   403),
    "approvals:run":                      (GET,  LOGIN,    404,   200,   404,   200,   200,   200),
    "approvals:run_retry":                (POST, LOGIN,    404,   302,   404,   302,   403,   302),
    "approvals:run_cancel":               (POST, LOGIN,    404,   302,   404,   302,   403,   302),
    "approvals:call_undo":                (POST, LOGIN,    404,   302,   404,   403,   403,   302),
    "approvals:insight":                  (GET,  LOGIN,    403,   403,   403,   403,   200,   200),
    # add a rule Insight proposes (access.can_add_learned_rule): the world proposes none, so root is told 400
    "approvals:insight_rule_add":         (POST, LOGIN,    403,   403,   403,   403,   403,   400),
    # the catch rates of practice calls: read as the insight page is (approvals.access.can_read_catch_rates)
    "practice:catch_rate":                (GET,  LOGIN,    403,   403,   403,   403,   200,   200),
    "practice:catch_rate_csv":            (GET,  LOGIN,    403,   403,   403,   403,   200,   200),
    # operations: probes and scrapers carry no session; /metrics needs its token or network, Slack its signature
    "ops:healthz":                        (GET,  200,      200,   200,   200,   200,   200,   200),
    "ops:readyz":                         (GET,  200,      200,   200,   200,   200,   200,   200),
    "ops:metrics":                        (GET,  403,      403,   403,   403,   403,   403,   403),
    "ops:slack_interactions":             (POST, 401,      401,   401,   401,   401,   401,   401),
    # a reviewer's own preferences; the table's POST names no action (add or delete), hence 400
    "ops:notifications":                  (FORM, LOGIN,    403,   400,   400,   400,   403,   400),
    # the admin site's own pages; admin_page(audrey, root)
    "admin:index":                        admin_page(200, 200),
    "admin:login":                        (GET,  200,      200,   200,   200,   200,   302,   302),
    "admin:logout":                       (POST, 302,      302,   302,   302,   302,   LOGIN, LOGIN),
    "admin:password_change":              admin_page(200, 200),
    "admin:password_change_done":         admin_page(200, 200),
    "admin:autocomplete":                 admin_page(403, 403),  # without its parameters
    "admin:jsi18n":                       admin_page(200, 200),
    "admin:view_on_site":                 admin_page(404, 404),  # a run has no page outside the admin to go to
    "admin:app_list":                     admin_page(200, 200),
    "admin/(?P<url>.*)$":                 admin_page(404, 404),
    "admin:auth_user_password_change":    admin_page(403, 200),
    "admin:approvals_auditevent_export":  admin_page(200, 200),
    # the agent API: a token, never a session (tests/test_api_*.py try the tokens); its description is public
    "api-v1:openapi-json":                (GET,  200,      200,   200,   200,   200,   200,   200),
    "api-v1:openapi-view":                (GET,  200,      200,   200,   200,   200,   200,   200),
    "api-v1:api-root":                    (GET,  404,      404,   404,   404,   404,   404,   404),
    "api-v1:tools_list":                  (GET,  401,      401,   401,   401,   401,   401,   401),
    "api-v1:tool_declare":                (POST, 405,      405,   405,   405,   405,   405,   405),  # PUT only
    "api-v1:call_propose":                (POST, 401,      401,   401,   401,   401,   401,   401),
    "api-v1:turn_propose":                (POST, 401,      401,   401,   401,   401,   401,   401),
    "api-v1:call_get":                    (GET,  401,      401,   401,   401,   401,   401,   401),
    "api-v1:call_claim":                  (POST, 401,      401,   401,   401,   401,   401,   401),
    "api-v1:call_report":                 (POST, 401,      401,   401,   401,   401,   401,   401),
    "api-v1:call_lease_renew":            (POST, 401,      401,   401,   401,   401,   401,   401),
    "api-v1:webhook_create":              (POST, 401,      401,   401,   401,   401,   401,   401),
    # sockets
    "ws/queue/":                          (WS,   SHUT,     SHUT,  OPEN,  OPEN,  OPEN,  SHUT,  OPEN),
    "ws/runs/<int:run_id>/":              (WS,   SHUT,     SHUT,  OPEN,  SHUT,  OPEN,  OPEN,  OPEN),
    ".*":                                 (WS,   SHUT,     SHUT,  SHUT,  SHUT,  SHUT,  SHUT,  SHUT),  # other paths
}

# The admin's pages for each model, by what kind of data it is:
RECORD = "written by the application only; staff with the view permission read it"
EDITABLE = "administrators write it; auditors read it"
ACCOUNTS = "administrators only"
ADMIN_MODELS = {
    "approvals.run": RECORD, "approvals.toolcall": RECORD, "approvals.decision": RECORD,
    "approvals.message": RECORD, "approvals.auditevent": RECORD, "approvals.shadowresult": RECORD,
    "approvals.policyrule": EDITABLE, "approvals.toolsetting": EDITABLE,
    "approvals.turnrule": EDITABLE, "approvals.turnshadow": RECORD,
    "shop.customer": EDITABLE, "shop.order": EDITABLE, "shop.refund": EDITABLE,
    "shop.ordernote": EDITABLE, "shop.outgoingemail": EDITABLE,
    "ops.notificationpreference": ACCOUNTS, "ops.slackchannel": ACCOUNTS, "ops.slackidentity": ACCOUNTS,
    "auth.user": ACCOUNTS, "auth.group": ACCOUNTS,
    "remote.remoteagent": RECORD, "remote.agenttoken": RECORD, "remote.declaredtool": RECORD,
    "remote.webhookdelivery": RECORD, "remote.webhook": EDITABLE,
    "gateway.gateway": EDITABLE, "gateway.upstream": EDITABLE,
    "agui.aguiagent": EDITABLE, "agui.exchange": RECORD,
    "practice.practicesetting": EDITABLE, "practice.practicecall": RECORD,
}
ADMIN_MODEL_PAGES = {
    # page               (audrey, root) for: RECORD      EDITABLE    ACCOUNTS
    "changelist":        {RECORD: (200, 200), EDITABLE: (200, 200), ACCOUNTS: (403, 200)},
    "add":               {RECORD: (403, 403), EDITABLE: (403, 200), ACCOUNTS: (403, 200)},
    "change":            {RECORD: (200, 200), EDITABLE: (200, 200), ACCOUNTS: (403, 200)},
    "delete":            {RECORD: (403, 403), EDITABLE: (403, 200), ACCOUNTS: (403, 200)},
    "history":           {RECORD: (200, 200), EDITABLE: (200, 200), ACCOUNTS: (403, 200)},
    "<path:object_id>/": {RECORD: (302, 302), EDITABLE: (302, 302), ACCOUNTS: (302, 302)},  # to the change page
}
# fmt: on


def _admin_model_rows() -> dict:
    rows = {}
    for label, kind in ADMIN_MODELS.items():
        app, model = label.split(".")
        for page, by_kind in ADMIN_MODEL_PAGES.items():
            key = f"admin/{app}/{model}/{page}" if page.startswith("<") else f"admin:{app}_{model}_{page}"
            rows[key] = admin_page(*by_kind[kind])
    return rows


EXPECTED |= _admin_model_rows()


# --- the routes, read from the configuration ------------------------------------------------------


@dataclass(frozen=True)
class Route:
    key: str  # the URL's name, or its pattern when it has none
    pattern: str

    @property
    def model(self) -> str | None:
        """The admin model this route's pages are about ("approvals.run"), if any."""
        match = re.match(r"admin/(\w+)/(\w+)/", self.pattern)
        return f"{match[1]}.{match[2]}" if match else None


def _walk(resolver, prefix="", namespace=""):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = ":".join(part for part in (namespace, entry.namespace) if part)
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        else:
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
            pattern = prefix + str(entry.pattern)
            yield Route(name or pattern, pattern)


def http_routes() -> list[Route]:
    return list(_walk(get_resolver()))


def socket_routes() -> list[Route]:
    return [Route(str(entry.pattern), str(entry.pattern)) for entry in websocket_urlpatterns]


def rule_for(route: Route) -> tuple:
    assert route.key in EXPECTED, (
        f"The route {route.key!r} ({route.pattern}) has no rule: add a row for it to EXPECTED in "
        "tests/access_table.py saying what each role gets."
    )
    method, *outcomes = EXPECTED[route.key]
    return method, dict(zip(ROLES, outcomes, strict=True))


# --- the world the routes are tried on ------------------------------------------------------------


@dataclass
class World:
    users: dict  # role -> user (None for anonymous)
    values: dict = field(default_factory=dict)  # what fills a route's parameters
    post: dict = field(default_factory=dict)  # what every POST sends

    def path(self, route: Route) -> str:
        def value(match) -> str:
            return str(self.value(route, match[1] or match[2]))

        filled = re.sub(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)", value, route.pattern)
        return "/" + filled.replace("^", "").replace("$", "")

    def value(self, route: Route, name: str):
        if name == "pk":
            return self.values["call" if route.pattern.startswith("calls/") else "run"]
        if name == "object_id" and route.model:
            return self.values[route.model]
        return self.values[name]


def _users() -> dict:
    User = get_user_model()
    demo_data.setup_roles()
    users = {"anonymous": None}
    for role, groups in [("oscar", []), ("alice", ["reviewers", "senior"]), ("bob", ["reviewers"])]:
        users[role] = User.objects.create_user(role)
        users[role].groups.add(*Group.objects.filter(name__in=groups))
    users["rita"] = User.objects.create_user("rita")
    users["rita"].groups.add(Group.objects.get(name="reviewers"))
    users["audrey"] = User.objects.create_user("audrey", is_staff=True)
    users["audrey"].groups.add(Group.objects.get(name="auditors"))
    users["root"] = User.objects.create_superuser("root")
    return users


def _shop_rows() -> None:
    order = Order.objects.get(number="A-1001")
    Refund.objects.create(order=order, amount=Decimal("1.00"), reason="A test", idempotency_key="access-refund")
    OutgoingEmail.objects.create(to="dana.smith@example.com", subject="Hi", body="Hi", idempotency_key="access-email")


def _remote_rows() -> dict:
    """An agent that runs elsewhere, with a token, a tool, a call, a webhook and a delivery."""
    from remote import services as remote_services
    from remote.models import Webhook, WebhookDelivery
    from remote.tokens import token_create

    agent, _ = remote_services.agent_get_or_create(name="elsewhere")
    token_create(agent=agent)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    declaration = {"description": "", "input_schema": schema, "tier": "approval", "description_template": ""}
    declaration |= {"decisions": ["approve", "reject"], "key_fields": []}
    remote_services.tool_declare(agent=agent, name="count", declaration=declaration)
    proposal = {"thread_id": "t", "tool": "count", "arguments": {"n": 1}, "reasoning": "", "user_request": "Count."}
    call, _ = remote_services.call_propose(agent=agent, proposal=proposal | {"facts": {}, "idempotency_key": "k"})
    hook = Webhook.objects.create(agent=agent, url="https://agent.example.com/hook", secret="whsec_" + "A" * 32)
    WebhookDelivery.objects.create(webhook=hook, tool_call=call, message_id="msg_access")
    _gateway_rows()
    _agui_rows(call.run)
    _practice_rows(call)
    return {"name": "count", "call_id": call.pk}


def _gateway_rows() -> None:
    """An MCP gateway with one upstream server (never started here)."""
    from gateway import services as gateway_services
    from gateway.models import Upstream

    gateway = gateway_services.gateway_create(name="mcp-access")
    Upstream.objects.create(gateway=gateway, name="shop", command="python server.py")


def _agui_rows(run) -> None:
    """An AG-UI agent (never reached here) and one exchange."""
    from agui.models import AguiAgent, Exchange
    from agui.services import agent_save

    agent_save(agent=AguiAgent(name="agui-access", endpoint_url="http://127.0.0.1:9/"))
    Exchange.objects.create(run=run, seq=0, agui_run_id="run-access")


def _practice_rows(source) -> None:
    """A practice setting and one practice call already decided, in a run of its own with no calls."""
    from practice.models import PracticeCall, PracticeSetting

    PracticeSetting.objects.create(tool_name="issue_refund", enabled=False)
    run = Run.objects.create(agent="support", request="Practice.", status=Run.Status.COMPLETED)
    fields = {"tool_name": source.tool_name, "mistake": "amount", "explanation": "Ten times the amount."}
    PracticeCall.objects.create(run=run, source=source, outcome=PracticeCall.Outcome.CAUGHT, **fields)


def _ops_rows(users: dict) -> None:
    NotificationPreference.objects.create(user=users["alice"], email=NotificationPreference.Email.DIGEST)
    SlackChannel.objects.create(group=Group.objects.get(name="senior"), channel_id="C-SENIOR")
    SlackIdentity.objects.create(user=users["alice"], slack_user_id="U-ALICE")


def build_world() -> World:
    """A run requested by rita: a note that ran (reversible), a refund waiting for the group "senior",
    and an email alice rejected; one row of every model the admin shows."""
    demo_data.seed_shop()
    users = _users()
    ToolSetting.objects.create(tool_name="issue_refund", group=Group.objects.get(name="senior"))
    PolicyRule.objects.create(name="Emails (trial)", tool_name="send_email", outcome="run", shadow=True)
    _shop_rows()
    _ops_rows(users)
    run = run_with(users["rita"], NOTE_CALL, REFUND_CALL, EMAIL)
    note, refund, email = (run.tool_calls.get(tool_name=name) for name in (NOTE_CALL[0], REFUND_CALL[0], EMAIL[0]))
    services.toolcall_decide(
        call_id=email.pk, reviewer=users["alice"], verdict="reject", shown_hash=email.review_hash, reason="Not yet."
    )
    TurnShadow.objects.create(
        rule=TurnRule.objects.create(name="Refunds (trial)", words="refund", shadow=True), run=run, step=1
    )
    values = _remote_rows()
    values |= {"run": run.pk, "call": refund.pk, "call_pk": note.pk, "run_id": run.pk, "id": users["oscar"].pk}
    values |= {"app_label": "approvals", "url": "nothing-here/", "fmt": "csv", "object_id": run.pk}
    values["content_type_id"] = ContentType.objects.get_for_model(Run).pk
    for label in ADMIN_MODELS:
        values[label] = apps.get_model(label).objects.order_by("pk").values_list("pk", flat=True).first()
    post = {"arguments_hash": refund.review_hash, "reason": "Not this one.", "guidance": "Refund $5 instead."}
    post |= {"calls": f"{refund.pk}:{refund.review_hash}", "agent": "support", "request": "Look up order A-1001."}
    post |= {"arg_order_id": "A-1001", "arg_amount": "40", "arg_reason": "Item arrived damaged"}
    post["decision"] = "continue"  # a held model turn's decision
    assert refund.status == ToolCall.Status.PENDING and note.status == ToolCall.Status.EXECUTED
    return World(users=users, values=values, post=post)


def http_outcome(response) -> int | str:
    """The status, with a redirect to a login page named as such."""
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith(reverse("admin:login")):
            return ADMIN_LOGIN
        if location.startswith(resolve_url(settings.LOGIN_URL)):
            return LOGIN
    return response.status_code
