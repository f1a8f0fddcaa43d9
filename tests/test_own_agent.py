"""docs/own-agent.md's example, run exactly as it is written there: its tool is held, described, checked,
previewed and run as declared, and its agent is offered that tool only."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from agents import loop, services
from agents.agents import registry as agents
from approvals import services as records
from approvals.admin import search
from approvals.models import ToolCall
from approvals.tools import registry as tools

from .reviewing import propose

pytestmark = pytest.mark.django_db

DOC = Path(settings.BASE_DIR) / "docs" / "own-agent.md"


def example(which: int = 0) -> str:
    """The doc's first example (a tool and its agent), or its second (a checkpoint added to that agent)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 2
    return blocks[which]


@pytest.fixture
def rewards(monkeypatch):
    """The example's code, executed; the registries it writes to are put back afterwards."""
    for registry, attribute in ((tools, "_tools"), (tools, "_allowed"), (agents, "_agents")):
        monkeypatch.setattr(registry, attribute, dict(getattr(registry, attribute)))
    exec(compile(example(), str(DOC), "exec"), {"__name__": "rewards.agents"})
    return agents.get("rewards")


def gift(model, requester, amount: int, email: str = "rita@example.com", **kwargs):
    model.script(
        {
            "content": "A thank-you.",
            "tool_calls": [{"name": "send_gift_card", "arguments": {"email": email, "amount": amount}}],
        }
    )
    run = services.run_start(agent_name="rewards", request="Thank Rita.", requested_by=requester, **kwargs)
    loop.advance(run.pk)
    return run.tool_calls.get()


def test_the_example_is_under_forty_lines():
    assert len(example().splitlines()) < 40


def test_the_examples_agent_is_offered_its_tool_only(rewards, requester, model):
    gift(model, requester, 25)
    assert [s["function"]["name"] for s in model.requests()[0]["tools"]] == ["send_gift_card"]


def test_the_examples_call_waits_for_a_person_with_its_description_and_facts(rewards, requester, reviewer, model):
    requester.email = "rita@example.com"
    requester.save()
    call = gift(model, requester, 25)
    assert call.status == ToolCall.Status.PENDING
    assert call.description == "Send a $25 gift card to rita@example.com"
    assert call.facts == {"has_account": True}
    assert list(ToolCall.objects.filter(search.calls("RITA@example.com"))) == [call]
    records.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    loop.advance(call.run_id)
    call.refresh_from_db()
    assert call.status == ToolCall.Status.EXECUTED
    assert call.output == "Sent a $25 gift card to rita@example.com."


def test_the_examples_check_refuses_a_call_before_anyone_sees_it(rewards, requester, model):
    call = gift(model, requester, 150)
    assert call.status == ToolCall.Status.INVALID
    assert "gift cards above $100 need a manager" in call.output


def test_the_examples_dry_run_shows_what_it_would_do(rewards, requester, reviewer, model):
    call = gift(model, requester, 25, dry_run=True)
    assert call.facts == {"has_account": False}
    records.toolcall_decide(call_id=call.pk, reviewer=reviewer, verdict="approve", shown_hash=call.arguments_hash)
    loop.advance(call.run_id)
    call.refresh_from_db()
    assert call.output == "[dry run] Would send a $25 gift card to rita@example.com. Nothing was sent."


def test_the_support_agent_cannot_call_the_examples_tool(rewards, shop, run):
    call = propose(run, "send_gift_card", {"email": "rita@example.com", "amount": 5})
    assert call.status == ToolCall.Status.INVALID and "no tool named 'send_gift_card'" in call.output


def test_the_checkpoint_example_holds_the_final_answer_until_a_person_approves_it(rewards, requester, reviewer, model):
    exec(compile(example() + example(1), str(DOC), "exec"), {"__name__": "rewards.agents"})
    model.script({"content": "Thank you for being with us, Rita!"})
    run = services.run_start(agent_name="rewards", request="Thank Rita.", requested_by=requester)
    loop.advance(run.pk)
    assert [s["function"]["name"] for s in model.requests()[0]["tools"]] == ["send_gift_card"]
    draft = run.tool_calls.get()
    assert (draft.kind, draft.status) == (ToolCall.Kind.CHECKPOINT, ToolCall.Status.PENDING)
    assert draft.arguments == {"draft": "Thank you for being with us, Rita!"}
    records.toolcall_decide(call_id=draft.pk, reviewer=reviewer, verdict="approve", shown_hash=draft.review_hash)
    loop.advance(run.pk)
    run.refresh_from_db()
    draft.refresh_from_db()
    assert run.status == "completed" and draft.output == "Posted the reply."
    assert run.messages.order_by("-seq").first().content == "Thank you for being with us, Rita!"
