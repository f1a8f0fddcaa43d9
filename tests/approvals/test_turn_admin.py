"""Turn rules in the admin: edited like policy rules, with what a shadow rule would have paused."""

import pytest
from django.urls import reverse

from approvals.models import Run, TurnRule, TurnShadow

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@shop.example", "pw"))
    return client


def test_the_list_says_how_many_turns_a_shadow_rule_would_have_paused(admin_client, requester):
    rule = TurnRule.objects.create(name="Refund talk (trial)", words="refund\nchargeback", shadow=True)
    run = Run.objects.create(agent="support", request="r", requested_by=requester)
    TurnShadow.objects.create(rule=rule, run=run, step=1)
    TurnShadow.objects.create(rule=rule, run=run, step=2)
    html = admin_client.get(reverse("admin:approvals_turnrule_changelist")).content.decode()
    assert "would have paused 2 turns" in html and "refund, chargeback" in html


def test_a_rule_that_matches_nothing_is_refused_with_a_clear_error(admin_client):
    data = {"name": "Nothing", "agent": "", "words": "", "order": 100, "enabled": "on"}
    response = admin_client.post(reverse("admin:approvals_turnrule_add"), data)
    assert response.status_code == 200
    assert "this rule matches nothing" in response.content.decode()
    assert not TurnRule.objects.exists()


def test_a_step_range_backwards_is_refused(admin_client):
    data = {"name": "Backwards", "from_step": 5, "until_step": 2, "order": 100, "enabled": "on"}
    response = admin_client.post(reverse("admin:approvals_turnrule_add"), data)
    assert "The last turn comes before the first" in response.content.decode()
    assert not TurnRule.objects.exists()


def test_a_valid_rule_is_saved(admin_client):
    data = {"name": "Probation", "agent": "orders", "order": 10, "enabled": "on"}
    assert admin_client.post(reverse("admin:approvals_turnrule_add"), data).status_code == 302
    assert TurnRule.objects.get().agent == "orders"


def test_auditors_read_turn_rules_and_change_nothing(client, auditor):
    TurnRule.objects.create(name="All", every_turn=True)
    client.force_login(auditor)
    assert client.get(reverse("admin:approvals_turnrule_changelist")).status_code == 200
    response = client.post(reverse("admin:approvals_turnrule_add"), {"name": "x", "every_turn": "on", "order": 1})
    assert response.status_code == 403


def test_a_held_turns_record_and_trail_open_in_the_admin(admin_client, make_run, reviewer):
    from agents import loop
    from approvals import services
    from approvals.models import AuditEvent, ToolCall

    TurnRule.objects.create(name="First turns", every_turn=True, until_step=1)
    run = make_run("Check the status of order A-1002.")
    turn = run.tool_calls.get(kind=ToolCall.Kind.TURN)
    services.turn_decide(call_id=turn.pk, reviewer=reviewer, verdict="note", shown_hash=turn.review_hash, text="Hi")
    loop.advance(run.pk)
    html = admin_client.get(reverse("admin:approvals_toolcall_change", args=[turn.pk])).content.decode()
    assert "model turn" in html
    kinds = list(AuditEvent.objects.filter(tool_call=turn).values_list("kind", "actor__username"))
    assert kinds == [("proposed", None), ("decided", "alice"), ("executed", None)]
    applied = AuditEvent.objects.get(tool_call=turn, kind="executed").payload
    assert applied["applied"] == "note" and applied["written_by"] == "alice"
    assert admin_client.get(reverse("admin:approvals_auditevent_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:approvals_run_change", args=[run.pk])).status_code == 200
