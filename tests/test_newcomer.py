"""What a newcomer and an operator meet first: the demo's port, a reviewer made from the command line, New run and
the queue saying who may decide, and the sentences on the run page and in the model's transcript."""

import io
import socket

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from agents import model_server
from approvals import access
from approvals.lib.text import key_text
from approvals.models import Run, ToolCall
from shop.management.commands import demo

from .reviewing import pending_call, post, run_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_taken_port_is_one_line_that_names_the_fix_before_anything_starts(taken_port, capsys):
    with pytest.raises(CommandError) as error:
        call_command("demo", "--port", str(taken_port), "--no-runs")
    assert str(error.value) == (
        f"Port {taken_port} on 127.0.0.1 is already in use. Start on another one: make run PORT=8001"
        " (or: python manage.py demo --port 8001)."
    )
    assert "ReviewHub is at" not in capsys.readouterr().out


def test_a_port_out_of_range_is_refused():
    with pytest.raises(CommandError, match="is not a port"):
        call_command("demo", "--port", "99999", "--no-runs")


def test_the_scripted_model_says_where_it_went_when_its_port_is_taken(monkeypatch, taken_port):
    monkeypatch.setattr(demo, "MODEL_PORT", taken_port)
    started = []
    real_serve = model_server.serve
    monkeypatch.setattr(demo.model_server, "serve", lambda port: started.append(real_serve(port=port)) or started[-1])
    url, said = demo._start_model_server()
    try:
        assert started[0].server_address[1] != taken_port
        assert said == f"Port {taken_port} is taken: the scripted demo model is on {url} instead"
    finally:
        started[0].shutdown()


def test_make_run_passes_the_port_to_the_demo():
    makefile = open("Makefile").read()
    assert "PORT ?= 8000" in makefile and "manage.py demo --port $(PORT)" in makefile


# --- create_reviewer -------------------------------------------------------------------------------


def make_reviewer(*args) -> str:
    out = io.StringIO()
    call_command("create_reviewer", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def new_password(monkeypatch):
    monkeypatch.setenv("REVIEWHUB_NEW_PASSWORD", "a-long-password-1")


def test_create_reviewer_makes_a_person_who_may_review_and_log_in(new_password, roles, client):
    said = make_reviewer("dora", "--email", "dora@example.com", "--group", "senior")
    assert said.strip() == "Made dora (reviewers, senior). They log in at /login/."
    dora = get_user_model().objects.get(username="dora")
    assert access.is_reviewer(dora) and not access.is_auditor(dora)
    assert {g.name for g in dora.groups.all()} == {"reviewers", "senior"}
    assert client.login(username="dora", password="a-long-password-1")


def test_create_reviewer_makes_the_reviewers_group_on_a_fresh_database(new_password, db):
    assert not Group.objects.exists()
    make_reviewer("dora")
    assert access.is_reviewer(get_user_model().objects.get(username="dora"))


def test_create_reviewer_can_make_an_auditor_who_changes_nothing(new_password, roles):
    make_reviewer("audra", "--auditor")
    audra = get_user_model().objects.get(username="audra")
    assert access.is_auditor(audra) and not access.is_reviewer(audra)
    assert access.may_act(audra)[0] is False


def test_create_reviewer_refuses_an_unknown_group_and_makes_nothing(new_password, roles):
    with pytest.raises(CommandError, match="No group named nightshift"):
        make_reviewer("dora", "--group", "nightshift")
    assert not get_user_model().objects.filter(username="dora").exists()


def test_create_reviewer_refuses_an_existing_name(new_password, reviewer):
    with pytest.raises(CommandError, match="There is a user named 'alice' already"):
        make_reviewer("alice")


def test_create_reviewer_refuses_a_short_password(monkeypatch, roles):
    monkeypatch.setenv("REVIEWHUB_NEW_PASSWORD", "short")
    with pytest.raises(CommandError, match="Password: This password is too short"):
        make_reviewer("dora")
    assert not get_user_model().objects.filter(username="dora").exists()


def test_create_reviewer_without_a_terminal_or_a_password_says_how(monkeypatch, roles):
    monkeypatch.delenv("REVIEWHUB_NEW_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO())
    with pytest.raises(CommandError, match="set REVIEWHUB_NEW_PASSWORD"):
        make_reviewer("dora")


# --- who may decide, said beforehand ------------------------------------------------------------------


def test_new_run_warns_a_reviewer_that_they_will_not_decide_their_own_runs_calls(client, requester, settings):
    settings.REVIEWHUB_DEMO_RUNS_AS = ""
    client.force_login(requester)
    page = client.get(reverse("agents:new_run")).text
    assert 'id="cannot-decide"' in page
    assert "you cannot decide its calls: another reviewer must." in page


def test_in_the_demo_new_run_gives_no_such_warning(client, reviewer, settings, shop):
    from shop import demo_data

    demo_data.seed_users()
    settings.REVIEWHUB_DEMO_RUNS_AS = "ops-agent"
    client.force_login(reviewer)
    assert 'id="cannot-decide"' not in client.get(reverse("agents:new_run")).text


def test_the_queue_row_says_when_the_viewer_may_not_decide_a_call(client, make_run, requester, reviewer):
    call = pending_call(make_run)
    assert call.run.requested_by == requester
    client.force_login(requester)
    assert "Your run: another reviewer decides" in client.get(reverse("approvals:queue")).text
    client.force_login(reviewer)
    assert "Your run: another reviewer decides" not in client.get(reverse("approvals:queue")).text


# --- the words ----------------------------------------------------------------------------------------


def test_a_reject_with_guidance_reads_as_two_sentences(make_run, client, reviewer):
    call = pending_call(make_run)
    client.force_login(reviewer)
    post(client, call, "respond", reason="Too much", guidance="refund $7.50")
    tool_message = call.run.messages.filter(role="tool").last()
    assert tool_message.content == "Rejected by reviewer: Too much. The reviewer's guidance follows."


def test_the_run_page_counts_only_the_model_turns_that_answered(client, requester, shop):
    run = Run.objects.create(agent="support", request="Help.", requested_by=requester, thinking=True, step_count=1)
    client.force_login(requester)
    page = client.get(reverse("approvals:run", args=[run.pk])).text
    assert "first model turn in progress" in page and "1 model turn" not in page
    Run.objects.filter(pk=run.pk).update(thinking=False, status=Run.Status.FAILED)
    page = client.get(reverse("approvals:run", args=[run.pk])).text
    assert "no model turn yet" in page and "1 model turn" not in page


def test_a_call_a_rule_ran_names_the_rule_in_the_decision_column(client, requester, shop):
    run = run_with(requester, ("get_order_status", {"order_id": "A-1001"}))
    call = run.tool_calls.get()
    assert call.status == ToolCall.Status.EXECUTED and not call.decisions.exists()
    client.force_login(requester)
    page = client.get(reverse("approvals:run", args=[run.pk])).text
    assert f"Ran without review ({call.policy['reason']})" in page
    assert "1 model turn" in page


def test_key_fields_show_money_as_money_and_a_whole_float_as_an_integer():
    from approvals.tools import registry

    refund = registry.get("issue_refund")
    shown = refund.key_values({"amount": 490.0, "order_id": "A-1001"})
    assert shown == [("amount", "$490.00"), ("order_id", "A-1001")]
    assert key_text(3.0) == 3 and key_text(2.5) == 2.5 and key_text(True) is True and key_text("x") == "x"
