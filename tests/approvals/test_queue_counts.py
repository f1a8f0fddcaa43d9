"""Counts past triage.COUNT_CAP read "1,000+": the queue's counting query reads a bounded window of calls,
whatever the size of the queue (here the cap is made small so that a few calls go past it)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from approvals import selectors
from approvals.web import triage
from tests.queueseed import pending_calls

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setattr(triage, "COUNT_CAP", 5)
    monkeypatch.setattr(triage, "PAGE_SIZE", 2)


def page(client, **params) -> str:
    response = client.get(reverse("approvals:queue"), params)
    assert response.status_code == 200
    return response.content.decode()


def test_past_the_cap_the_queue_says_more_and_pages_on_while_pages_are_full(client, reviewer, requester, small_cap):
    pending_calls(9, requester=requester, amount=20)
    client.force_login(reviewer)
    first = page(client)
    assert 'data-count="6" data-more="1">5+</span> pending · page 1 of 3+' in first
    assert ">5+</span>" in first.split('id="queue-count"')[1][:400]  # the badge in the header
    assert "<title>(5+) Review queue" in first
    assert "6+ issue_refund calls under $50 from the support agent" in first  # 6 counted, maybe more
    assert 'rel="next"' in page(client, page=4)  # counted no further, but this page is full: there may be more
    last = page(client, page=5)
    assert last.count('class="qrow ') == 1 and 'rel="next"' not in last and "page 5 of 5+" in last


def test_below_the_cap_counts_are_exact(client, reviewer, requester, small_cap):
    pending_calls(5, requester=requester, amount=20)
    client.force_login(reviewer)
    html = page(client)
    assert 'data-count="5">5</span> pending · page 1 of 3</p>' in html
    assert "5 issue_refund calls under $50" in html
    assert 'rel="next"' not in page(client, page=3)


def test_a_filter_counts_its_matches_beyond_the_oldest_calls(client, reviewer, requester, small_cap):
    pending_calls(7, requester=requester, amount=20)
    pending_calls(3, requester=requester, tool="send_email", agent="mailer")  # newer than the window
    client.force_login(reviewer)
    html = page(client, tool="send_email")
    assert 'data-count="3">3</span> of 5+ pending match' in html
    assert "send_email" in html.split('name="tool"')[1].split("</select>")[0]  # the filter in use stays a choice


def test_the_badge_and_the_push_count_stop_past_the_cap(reviewer, requester, django_user_model, small_cap):
    run = pending_calls(8, requester=requester)
    call = run.tool_calls.first()
    assert selectors.pending_count(reviewer) == 6
    assert selectors.sees_calls_and_pending_count(reviewer, [call.pk]) == ({call.pk}, 6)
    nobody = django_user_model.objects.create(username="nobody")  # not a reviewer
    assert selectors.sees_calls_and_pending_count(nobody, [call.pk]) == (set(), 0)


def test_every_read_of_the_pending_calls_on_the_queue_page_is_bounded(client, reviewer, requester):
    pending_calls(60, requester=requester)
    client.force_login(reviewer)
    for params in ({}, {"tool": "issue_refund", "q": "order", "mine": "1", "sort": "amount"}):
        with CaptureQueriesContext(connection) as queries:
            page(client, **params)
        reads = [q["sql"] for q in queries if 'FROM "approvals_toolcall"' in q["sql"]]
        assert len(reads) >= 2  # the page of rows, and the counts and facets
        for sql in reads:  # each read of the table stops: none counts every pending call
            assert sql.count('FROM "approvals_toolcall"') <= sql.count(" LIMIT "), sql
