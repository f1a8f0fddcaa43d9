"""The admin as an auditor uses it: everything readable, nothing changeable, each call's chain on one page."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents import loop
from approvals import services
from approvals.models import AuditEvent, PolicyRule, ToolCall, ToolSetting
from tests.tampering import tampering

pytestmark = pytest.mark.django_db

RECORD = ["run", "toolcall", "decision", "message", "auditevent"]


@pytest.fixture
def rule(db):
    return PolicyRule.objects.create(
        name="Small refunds", tool_name="issue_refund", field="amount", operator="<=", value=20, outcome="run"
    )


@pytest.fixture
def setting(db):
    return ToolSetting.objects.create(tool_name="issue_refund", timeout_minutes=30)


@pytest.fixture
def staff_reviewer(reviewer):
    reviewer.is_staff = True
    reviewer.save()
    return reviewer


def changelist(model):
    return reverse(f"admin:approvals_{model}_changelist")


def change(model, pk):
    return reverse(f"admin:approvals_{model}_change", args=[pk])


def ids(response):
    return sorted(obj.pk for obj in response.context["cl"].result_list)


def test_an_auditor_can_read_every_list_and_page_of_the_record(client, auditor, approved_refund, rule, setting):
    client.force_login(auditor)
    objects = {
        "run": approved_refund.run,
        "toolcall": approved_refund,
        "decision": approved_refund.decisions.get(),
        "message": approved_refund.run.messages.first(),
        "auditevent": AuditEvent.objects.first(),
        "policyrule": rule,
        "toolsetting": setting,
    }
    for model, obj in objects.items():
        assert client.get(changelist(model)).status_code == 200, model
        page = client.get(change(model, obj.pk))
        assert page.status_code == 200, model
        assert 'name="_save"' not in page.content.decode(), model


def test_an_auditor_cannot_add_change_or_delete_anything(client, auditor, approved_refund, rule, setting):
    client.force_login(auditor)
    objects = {
        "run": approved_refund.run,
        "toolcall": approved_refund,
        "decision": approved_refund.decisions.get(),
        "auditevent": AuditEvent.objects.first(),
        "policyrule": rule,
        "toolsetting": setting,
    }
    for model, obj in objects.items():
        assert client.get(reverse(f"admin:approvals_{model}_add")).status_code == 403, model
        assert (
            client.post(change(model, obj.pk), {"name": "changed", "verdict": "reject", "kind": "decided"}).status_code
            == 403
        ), model
        assert client.get(reverse(f"admin:approvals_{model}_delete", args=[obj.pk])).status_code == 403, model
        assert (
            client.post(reverse(f"admin:approvals_{model}_delete", args=[obj.pk]), {"post": "yes"}).status_code == 403
        ), model
    page = client.get(changelist("policyrule")).content.decode()
    assert 'name="form-0-enabled"' not in page  # no list_editable for auditors
    client.post(
        changelist("policyrule"),
        {
            "form-TOTAL-FORMS": "1",
            "form-INITIAL-FORMS": "1",
            "form-0-id": rule.pk,
            "form-0-order": "1",
            "_save": "Save",
        },
    )
    rule.refresh_from_db()
    assert rule.order == 100 and rule.enabled
    assert AuditEvent.objects.filter(tool_call=approved_refund).count() == 4
    setting.refresh_from_db()
    assert setting.timeout_minutes == 30


def test_an_auditor_who_is_also_a_superuser_still_cannot_edit_rules_or_settings(client, auditor, rule, setting):
    auditor.is_superuser = True
    auditor.save()
    client.force_login(auditor)
    assert client.post(change("policyrule", rule.pk), {"name": "changed"}).status_code == 403
    assert client.get(reverse("admin:approvals_policyrule_add")).status_code == 403
    assert client.post(change("toolsetting", setting.pk), {"timeout_minutes": "1"}).status_code == 403


def test_a_reviewer_cannot_open_the_audit_admin(client, staff_reviewer, approved_refund):
    client.force_login(staff_reviewer)
    for model in RECORD:
        assert client.get(changelist(model)).status_code == 403, model
    assert client.get(change("auditevent", AuditEvent.objects.first().pk)).status_code == 403
    assert client.get(reverse("admin:approvals_auditevent_export", args=["jsonl"])).status_code == 403


def test_someone_who_is_not_staff_is_sent_to_the_admin_login(client, reviewer):
    client.force_login(reviewer)
    response = client.get(changelist("auditevent"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_call_page_shows_the_chain_from_proposal_through_decision_to_result(client, auditor, approved_refund):
    client.force_login(auditor)
    page = client.get(change("toolcall", approved_refund.pk)).content.decode()
    assert "✓ Every event below matches its hash and follows the event before it in its chain." in page
    assert "✓ What ran is what was approved" in page
    for text in [
        "Proposed, held for review",
        approved_refund.description,
        "Order total",
        "Approved by <strong>alice</strong>",
        "Ran with idempotency key <code>" + approved_refund.idempotency_key,
        "Executed",
        "Refunded $35.00 on order A-1002",
    ]:
        assert text in page
    order = [
        page.index(t)
        for t in ("Proposed, held for review", "Approved by", "Ran with idempotency key", "Refunded $35.00")
    ]
    assert order == sorted(order)


def test_the_call_page_flags_an_event_that_was_changed(client, auditor, approved_refund):
    with tampering():
        AuditEvent.objects.filter(tool_call=approved_refund, kind="decided").update(actor_label="bob")
    client.force_login(auditor)
    page = client.get(change("toolcall", approved_refund.pk)).content.decode()
    assert "content does not match its hash" in page
    assert "✗ Some events below do not match" in page


def test_an_event_deleted_from_a_chain_shows_where_the_chain_breaks(client, auditor, approved_refund):
    """The event before another is found by its chain's order: a deleted one leaves the next one linked to
    an event with another hash, on the call's page and on the event's own."""
    from approvals import audit

    executing = AuditEvent.objects.get(tool_call=approved_refund, kind="executing")
    executed = AuditEvent.objects.get(tool_call=approved_refund, kind="executed")
    assert audit.call_chain(approved_refund).intact
    with tampering():
        AuditEvent.objects.filter(pk=executing.pk).delete()
    chain = audit.call_chain(approved_refund)
    broken = [step.event.pk for step in chain.steps if not step.link_ok]
    assert broken == [executed.pk] and not chain.intact
    client.force_login(auditor)
    page = client.get(change("toolcall", approved_refund.pk)).content.decode()
    assert "✗ Some events below do not match their hash or their link" in page
    assert page.count("does not follow the event before it in its chain") == 1
    event_page = client.get(change("auditevent", executed.pk)).content.decode()
    assert "comes before it, with another hash" in event_page


def test_the_call_list_filters_by_tool_tier_outcome_reviewer_and_date(client, auditor, approved_refund, reviewer2):
    client.force_login(auditor)
    lookup = ToolCall.objects.get(tool_name="get_order_status")
    reply = ToolCall.objects.get(tool_name="reply_to_customer")  # the run's answer, waiting as a draft reply
    url = changelist("toolcall")
    assert ids(client.get(url)) == [lookup.pk, approved_refund.pk, reply.pk]
    assert ids(client.get(url, {"tool": "issue_refund"})) == [approved_refund.pk]
    assert ids(client.get(url, {"tier": "read_only"})) == [lookup.pk]
    assert ids(client.get(url, {"outcome": "approve"})) == [approved_refund.pk]
    assert ids(client.get(url, {"outcome": "auto_run"})) == [lookup.pk]
    assert ids(client.get(url, {"outcome": "reject"})) == []
    assert ids(client.get(url, {"reviewer": approved_refund.decisions.get().reviewer_id})) == [approved_refund.pk]
    assert ids(client.get(url, {"reviewer": reviewer2.pk})) == []
    assert ids(client.get(url, {"created_at__gte": "2000-01-01", "created_at__lt": "2000-01-02"})) == []
    assert ids(client.get(url, {"created_at__gte": approved_refund.created_at.date().isoformat()})) == [
        lookup.pk,
        approved_refund.pk,
        reply.pk,
    ]


def test_the_other_lists_filter_by_tool_verdict_kind_and_date(client, auditor, approved_refund):
    client.force_login(auditor)
    decision = approved_refund.decisions.get()
    assert ids(client.get(changelist("decision"), {"tool": "issue_refund", "verdict": "approve"})) == [decision.pk]
    assert ids(client.get(changelist("decision"), {"tool": "send_email"})) == []
    events = client.get(changelist("auditevent"), {"tool": "issue_refund", "kind": "executing"})
    assert ids(events) == [AuditEvent.objects.get(tool_call=approved_refund, kind="executing").pk]
    by_alice = client.get(changelist("auditevent"), {"actor": decision.reviewer_id})
    assert ids(by_alice) == [AuditEvent.objects.get(kind="decided").pk]


def test_search_finds_calls_by_run_order_and_customer(client, auditor, approved_refund):
    client.force_login(auditor)
    url = changelist("toolcall")
    both = sorted(approved_refund.run.tool_calls.values_list("pk", flat=True))
    assert ids(client.get(url, {"q": str(approved_refund.run_id)})) == both
    assert ids(client.get(url, {"q": str(approved_refund.run.public_id)})) == both
    assert ids(client.get(url, {"q": "A-1002"})) == both
    assert ids(client.get(url, {"q": "a-1002"})) == both
    # The refund, and the run's reply to Lee (its facts name the customer), waiting as a draft.
    reply = approved_refund.run.tool_calls.get(tool_name="reply_to_customer")
    assert ids(client.get(url, {"q": "Lee"})) == [approved_refund.pk, reply.pk]
    assert ids(client.get(url, {"q": "lee.wong@example.com"})) == [approved_refund.pk, reply.pk]
    assert ids(client.get(url, {"q": "A-1003"})) == []
    events = ids(client.get(changelist("auditevent"), {"q": "A-1002"}))
    assert events == sorted(AuditEvent.objects.filter(tool_call__in=both).values_list("pk", flat=True))
    assert ids(client.get(changelist("run"), {"q": "Lee"})) == [approved_refund.run_id]
    assert ids(client.get(changelist("decision"), {"q": "A-1002"})) == [approved_refund.decisions.get().pk]


def _queries(client, url) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in captured]


def test_list_and_chain_pages_run_as_many_queries_with_more_data(client, auditor, make_run, reviewer, approved_refund):
    client.force_login(auditor)
    urls = [changelist(m) for m in RECORD] + [
        change("toolcall", approved_refund.pk),
        changelist("toolcall") + "?reviewer=1&outcome=approve",
    ]
    before = {url: len(_queries(client, url)) for url in urls}
    for _ in range(3):
        run = make_run("Check the status of order A-1002 and refund $35 for the missing item.")
        call = run.tool_calls.get(status="pending")
        services.toolcall_decide(
            call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash, approve_anyway=True
        )
        loop.advance(run.pk)
    assert {url: len(_queries(client, url)) for url in urls} == before


def test_the_lists_never_count_the_whole_table(client, auditor, approved_refund):
    from approvals.admin.base import CappedPaginator

    client.force_login(auditor)
    for model in RECORD:
        counts = [sql for sql in _queries(client, changelist(model)) if "COUNT(" in sql.upper()]
        assert counts, model
        assert all(f"LIMIT {CappedPaginator.cap + 1}" in sql for sql in counts), model


def test_a_capped_list_says_there_are_more(client, auditor, approved_refund, monkeypatch):
    from approvals.admin.base import CappedPaginator

    monkeypatch.setattr(CappedPaginator, "cap", 3)
    client.force_login(auditor)
    page = client.get(changelist("auditevent")).content.decode()
    assert "More than 3 audit events" in page


def test_hidden_characters_in_what_the_model_wrote_are_made_visible(client, auditor, approved_refund):
    ToolCall.objects.filter(pk=approved_refund.pk).update(reasoning="Refund \u202eevil\u202c now")
    client.force_login(auditor)
    page = client.get(change("toolcall", approved_refund.pk)).content.decode()
    assert "[U+202E]" in page and "\u202e" not in page
