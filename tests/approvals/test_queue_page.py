"""The reviewer's queue as a triage list: filters, sort, pages, similar-call groups, and a cost that does
not grow with the queue."""

import pytest
from django.urls import reverse

from approvals.models import Decision, ToolCall
from tests.queueseed import pending_calls

pytestmark = pytest.mark.django_db

REFUNDS_UNDER_50 = {"tool": "issue_refund", "agent": "support", "band": "under-50"}


def page(client, **params) -> str:
    response = client.get(reverse("approvals:queue"), params)
    assert response.status_code == 200
    return response.content.decode()


def rows(html: str) -> int:
    return html.count('class="qrow ')


@pytest.mark.parametrize("size", [10, 1000])
def test_the_queue_page_takes_at_most_eight_queries_at_any_size(client, reviewer, requester, size,
                                                                django_assert_max_num_queries):  # fmt: skip
    pending_calls(size, requester=requester)
    client.force_login(reviewer)
    with django_assert_max_num_queries(8):
        html = page(client)
    assert rows(html) == min(size, 50)


def test_the_number_of_queries_does_not_grow_with_the_queue(client, reviewer, requester):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(reviewer)
    counts = []
    for size in (10, 1000):
        pending_calls(size, requester=requester)
        for params in ({}, {"sort": "amount", "mine": "1", "near": "1", "q": "order"}):
            with CaptureQueriesContext(connection) as queries:
                page(client, **params)
            counts.append(len(queries))
    assert counts[:2] == counts[2:]


def test_the_list_shows_fifty_rows_a_page_and_links_to_the_next(client, reviewer, requester):
    pending_calls(120, requester=requester)
    client.force_login(reviewer)
    first, last = page(client), page(client, page=3)
    assert rows(first) == 50 and 'rel="next"' in first and "page 1 of 3" in first
    assert rows(last) == 20 and 'rel="next"' not in last


def test_a_row_shows_the_tool_its_key_fields_time_left_and_links_to_the_call(client, reviewer, requester):
    run = pending_calls(1, requester=requester, amount=45)
    call = run.tool_calls.get()
    client.force_login(reviewer)
    html = page(client)
    assert "Refund $45.00 on order A-1000" in html and "<small>Amount</small> $45.00" in html
    assert f'href="/calls/{call.pk}/" hx-get="/calls/{call.pk}/" hx-target="#detail"' in html
    assert "left</span>" in html and "any reviewer" in html


def test_filters_keep_only_the_calls_asked_for(client, reviewer, requester):
    pending_calls(3, requester=requester)
    pending_calls(2, requester=requester, tool="send_email", agent="mailer")
    client.force_login(reviewer)
    assert rows(page(client, tool="send_email")) == 2
    assert rows(page(client, agent="support")) == 3
    assert rows(page(client, q="c1@example")) == 1
    assert rows(page(client, tier="approval")) == 5
    assert rows(page(client, group="-")) == 5
    assert rows(page(client, near="1")) == 0


def test_mine_leaves_out_the_calls_of_runs_i_requested_and_those_i_approved(client, reviewer, requester):
    mine = pending_calls(2, requester=requester).tool_calls.order_by("pk")
    pending_calls(3, requester=reviewer)
    first = mine[0]
    Decision.objects.create(tool_call=first, reviewer=reviewer, verdict="approve", final=False, round=1)
    client.force_login(reviewer)
    html = page(client, mine="1")
    assert rows(html) == 1 and f'id="row-{mine[1].pk}"' in html


def test_sorting_by_amount_puts_the_largest_first(client, reviewer, requester):
    pending_calls(1, requester=requester, amount=5)
    pending_calls(1, requester=requester, amount=500)
    pending_calls(1, requester=requester, tool="send_email")
    client.force_login(reviewer)
    html = page(client, sort="amount")
    assert html.index("Refund $500.00") < html.index("Refund $5.00") < html.index("Email c0@")


def test_nonsense_in_the_query_string_is_ignored(client, reviewer, requester):
    pending_calls(2, requester=requester)
    client.force_login(reviewer)
    assert rows(page(client, page="x", sort="drop table", tier="nope", band="?", mine="yes")) == 2
    assert rows(page(client, page="99999999999")) == 2  # read as page 1
    assert rows(page(client, page="999")) == 0


def test_similar_calls_are_grouped_by_tool_agent_and_amount_band(client, reviewer, requester):
    pending_calls(14, requester=requester, amount=20)
    pending_calls(2, requester=requester, amount=900)
    client.force_login(reviewer)
    html = page(client)
    assert "14 issue_refund calls under $50 from the support agent" in html
    assert "2 issue_refund calls over $500 from the support agent" in html


def test_a_group_batch_approves_each_call_bound_to_its_hash(client, reviewer, requester):
    calls = list(pending_calls(3, requester=requester, amount=20).tool_calls.order_by("pk"))
    pending_calls(1, requester=requester, amount=900)
    client.force_login(reviewer)
    html = client.get(reverse("approvals:queue_group"), REFUNDS_UNDER_50).content.decode()
    assert "3 issue_refund calls under $50 from the support agent" in html
    values = [f"{call.pk}:{call.arguments_hash}" for call in calls]
    assert all(f'value="{value}" checked' in html for value in values)

    stale = f"{calls[2].pk}:{'0' * 64}"  # arguments other than those shown
    client.post(reverse("approvals:approve_selected"), {"calls": values[:2] + [stale]})
    statuses = [ToolCall.objects.get(pk=call.pk).status for call in calls]
    assert statuses == ["approved", "approved", "pending"]


def test_a_group_leaves_out_calls_the_reviewer_may_not_decide(client, requester):
    pending_calls(3, requester=requester, amount=20)
    client.force_login(requester)
    html = client.get(reverse("approvals:queue_group"), REFUNDS_UNDER_50).content.decode()
    assert "None of these calls waits for your decision." in html


def test_nonsense_asked_of_a_group_is_answered_with_an_empty_group(client, reviewer, requester):
    pending_calls(2, requester=requester, amount=20)
    client.force_login(reviewer)
    nul = client.get(reverse("approvals:queue_group"), {"tool": "issue\x00_refund", "agent": "support"})
    assert nul.status_code == 200  # the NUL is dropped, as from the queue's filters
    for params in ({"tool": "issue_refund", "agent": "support", "band": "'; drop"}, {}):
        response = client.get(reverse("approvals:queue_group"), params)
        assert response.status_code == 200 and 'name="calls"' not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_remote_agents_calls_cost_the_queue_page_no_query_per_row(client, reviewer):
    """A remote call's tool is its agent's declaration: read for all the rows together (Advancer.resolve_tools)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.agentapi import AgentClient, proposed_in_threads

    agent = AgentClient("queue-bot")
    agent.declare()
    client.force_login(reviewer)
    counts = []
    for threads in (2, 12):
        proposed_in_threads(agent, threads)
        page(client)  # what a process reads once (the policy's snapshot, the declarations' adapters)
        with CaptureQueriesContext(connection) as queries:
            html = page(client)
        counts.append(len(queries))
    assert rows(html) == 14 and counts[0] == counts[1], counts
