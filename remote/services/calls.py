"""A remote agent's calls: proposed through the same gate as the model's, claimed once, reported once.

A proposal becomes an assistant message with one tool call in the run of its thread, and goes
through approvals' gate (schema, tier, rules as data, groups, N-of-M, expiry); what a reviewer
decides comes back to the agent by long-poll and webhook. The agent executes approved calls
itself: it claims the execution with the decision's execution key (a conditional update
exactly one caller wins) and reports the result, which the trail records.
"""

import functools
import hmac
import json
import uuid

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from approvals import access, audit, live, services
from approvals.kinds.question import question_problem
from approvals.lib.hashing import args_hash, canonical_json
from approvals.lib.unique import one_or_none
from approvals.models import Message, Run, Tier, ToolCall
from approvals.planted import planted
from approvals.tools import ArgumentsInvalid

from ..declared import adapter_for, draft_problem, proposed_tool
from ..errors import Conflict, Invalid, NotFound, invalid_fields
from ..keys import execution_key
from ..models import DeclaredTool, RemoteAgent, RemoteCall, Thread

REPORTED = (ToolCall.Status.EXECUTED, ToolCall.Status.FAILED)


def _thread_run(agent: RemoteAgent, thread_id: str, user_request: str) -> tuple[Run, str]:
    """The thread's run and the user's request to append to it ("" when it is not a new one); for a new thread, a
    run opened for the step to store (services.run_open). One statement."""
    last_request = Message.objects.filter(run=OuterRef("run"), role=Message.Role.USER).order_by("-seq")
    threads = Thread.objects.filter(agent=agent, thread_id=thread_id, run__in=access.agent_runs(agent.user))
    last = Subquery(last_request.values("content")[:1])
    thread = one_or_none(threads.select_related("run").annotate(last_request=last))  # one per agent and id
    if thread is not None:
        return thread.run, user_request if user_request and user_request != thread.last_request else ""
    run = services.run_open(
        agent=agent.name,
        request=user_request or f"Thread {thread_id}",
        requested_by=agent.user,
        advanced_by=Run.AdvancedBy.REMOTE,
    )
    return run, ""


def _existing(agent: RemoteAgent, key: str, request_hash: str) -> ToolCall | None:
    """The call proposed with this key before, as the agent may see it (ready for its answer), or None."""
    calls = access.agent_calls(agent.user).filter(remote__agent=agent, remote__idempotency_key=key)
    found = one_or_none(calls.select_related("run", "remote__tool"))  # one per agent and key
    if found is None:
        return None
    if found.remote.request_hash != request_hash:
        raise Conflict(
            "This idempotency key was used for a different proposal.",
            {"idempotency_key": ["Used before with a different body; use a new key for a new call."]},
        )
    return found


def _declared(agent: RemoteAgent, name: str, arguments: dict) -> DeclaredTool:
    tool = one_or_none(DeclaredTool.objects.filter(agent=agent, name=name, current=True))  # one current
    if tool is None:
        raise NotFound(f"There is no tool named {name!r}; declare it first (PUT /api/v1/tools/{{name}}).")
    tool.agent = agent  # its qualified name, without reading the agent again
    if tool.tier == Tier.FORBIDDEN:
        raise Invalid(f"{name} is forbidden.", {"tool": [f"{name} is forbidden: its calls are never run."]})
    try:
        adapter_for(tool).parse(arguments)
    except ArgumentsInvalid as exc:
        raise invalid_fields(exc.errors, "arguments")
    return tool


def stored(
    call: ToolCall, *, agent: RemoteAgent, tool: DeclaredTool | None, proposal: dict, request_hash: str, opened: bool
) -> ToolCall:
    """The API's rows of a call just stored (its thread's, when the step opened the run), and the call ready for
    its answer, built from what was written: nothing is read back."""
    if opened:
        Thread.objects.create(agent=agent, thread_id=proposal["thread_id"], run=call.run)
    RemoteCall.objects.create(
        tool_call=call,
        agent=agent,
        tool=tool,
        thread_id=proposal["thread_id"],
        idempotency_key=proposal["idempotency_key"],
        request_hash=request_hash,
    )
    call.loaded_decisions = []  # just stored: nobody decided it yet
    return call


def retried_once(propose):
    """Run a proposal once more if another request stored its idempotency key or opened its thread meanwhile
    (their unique constraints, not a lock, keep proposals of one agent apart): the second time it is the retry."""

    @functools.wraps(propose)
    def once_more(*, agent: RemoteAgent, proposal: dict):
        try:
            return propose(agent=agent, proposal=dict(proposal))
        except IntegrityError:
            return propose(agent=agent, proposal=dict(proposal))

    return once_more


def _question(question: dict | None) -> dict | None:
    """The question a proposal asks, as stored (the schema under its own name); 422 if nobody could answer it."""
    if not question:
        return None
    schema = question["schema_"] if "schema_" in question else question.get("schema")
    question = {"prompt": question["prompt"], "schema": schema, "payload": question.get("payload") or {}}
    problem = question_problem(question)
    if problem:
        raise Invalid(f"question: {problem}", {"question": [problem]})
    return question


def call_refusal(call: ToolCall) -> Invalid | None:
    """For a call the gate refused (a rule forbids it): the 422 the agent gets. It is in the trail all the same,
    so the API raises it after the proposal's commit."""
    if call.status in (ToolCall.Status.FORBIDDEN, ToolCall.Status.INVALID):
        return Invalid(call.output, {"tool": [call.output]})
    return None


@retried_once
@transaction.atomic
def call_propose(*, agent: RemoteAgent, proposal: dict) -> tuple[ToolCall, bool]:
    """Propose a call (thread_id, tool, arguments, reasoning, user_request, facts, idempotency_key): one
    transaction, in which the thread's run is found or opened and the call goes through the gate.

    Returns the call and whether it is new (a call the gate refused: see call_refusal). The same key with
    the same body returns the same call; with another body, 409. Arguments failing the declared schema:
    422 naming the field, nothing stored.
    """
    kind = proposal.pop("kind", ToolCall.Kind.CALL)  # hashed only when it is not the default: keys stay valid
    request_hash = args_hash(canonical_json(proposal if kind == ToolCall.Kind.CALL else proposal | {"kind": kind}))
    existing = _existing(agent, proposal["idempotency_key"], request_hash)
    if existing is not None:
        return existing, False
    tool = _declared(agent, proposal["tool"], proposal["arguments"])
    question = _question(proposal.get("question"))
    if kind == ToolCall.Kind.CHECKPOINT and (problem := draft_problem(tool)):
        raise Invalid(problem, {"tool": [problem]})
    run, request = _thread_run(agent, proposal["thread_id"], proposal["user_request"])
    opening = run.pk is None
    fields = {"agent_facts": proposal["facts"], "user_request": proposal["user_request"] or run.request}
    raw = json.dumps(proposal["arguments"], ensure_ascii=False)
    proposed = services.ProposedCall(
        f"call_{uuid.uuid4().hex[:24]}", tool.qualified_name, raw, kind, proposed_tool(tool, kind), fields, question
    )
    message = services.step_record(
        run=run, content=proposal["reasoning"], calls=[proposed], request=request, ids_unique=True, settles_run=True
    )
    call = message.step_calls[0]
    return stored(call, agent=agent, tool=tool, proposal=proposal, request_hash=request_hash, opened=opening), True


def agent_call(agent: RemoteAgent, call_id: int, *, lock: bool = False) -> ToolCall:
    """The call if this agent may see it (access.agent_calls); else NotFound, as if it did not exist."""
    calls = access.agent_calls(agent.user).select_related("run", "remote__tool")
    if lock:
        calls = calls.select_for_update(of=("self",))
    call = one_or_none(calls.filter(pk=call_id))
    if call is None:
        raise NotFound("There is no such call.")
    return call


def _check_key(call: ToolCall, key: str, *, reporting: bool = False) -> None:
    """Refuse what may not claim, renew or (`reporting`) report on this call. A report is still taken once the
    outcome is unknown: the process that ran the tool knows what a reviewer was about to be asked."""
    if call.kind == ToolCall.Kind.TURN:
        raise Conflict("A model turn has nothing to execute or report: apply its decision (docs/api.md).")
    if call.status == ToolCall.Status.OUTCOME_UNKNOWN and not reporting:
        raise Conflict(
            "The lease on this call lapsed without a report: its outcome is unknown and a reviewer settles it "
            "(it ran, run it now, or fail the run). Do not run it again.",
            {"status": [call.status]},
        )
    reportable = (*ToolCall.RUNNABLE, *REPORTED, *((ToolCall.Status.OUTCOME_UNKNOWN,) if reporting else ()))
    if call.status not in reportable or call.approved_arguments is None:
        raise Conflict(f"This call is {call.status}, not approved: it must not be executed.")
    if not hmac.compare_digest(key.encode(), execution_key(call).encode()):
        raise Conflict("Wrong execution key for this call.", {"execution_key": ["Not this call's execution key."]})


def _take(call: ToolCall) -> bool:
    """The claim for one lease: an approved call, or an idempotent tool's call whose lease lapsed."""
    now = timezone.now()
    fields = {"status": ToolCall.Status.EXECUTING, "claimed_at": now, "lease_expires_at": services.lease_until(now)}
    if ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.APPROVED).update(**fields):
        return True
    return services.lease_retake(call=call, fields=fields, now=now)


def call_claim(*, agent: RemoteAgent, call_id: int, key: str) -> tuple[bool, ToolCall]:
    """Take an approved call for execution, for one lease: exactly one caller wins; the others get its state."""
    call = agent_call(agent, call_id)
    _check_key(call, key)
    if planted.is_practice_run(call.run_id):  # a practice call is never executed, by any agent (approvals/planted.py)
        raise Conflict("This call must not be executed.")
    with transaction.atomic():
        won = _take(call)
        if won:
            payload = {"claimed_by": agent.name, "arguments": call.approved_arguments, "execution_key_of": "agent"}
            audit.record(audit.AuditEvent.Kind.EXECUTING, tool_call=call, actor=agent.user, payload=payload)
            live.call_changed(call.pk)
            live.run_changed(call.run_id)
    call.refresh_from_db()
    return bool(won), call


def call_lease_renew(*, agent: RemoteAgent, call_id: int, key: str) -> ToolCall:
    """Extend this agent's claim by one lease while its tool runs; 409 once the call is not executing or its
    lease lapsed (then the sweep settles it: claimed again if idempotent, else outcome unknown)."""
    call = agent_call(agent, call_id)
    _check_key(call, key)
    if call.status != ToolCall.Status.EXECUTING:
        raise Conflict(
            f"This call is {call.status}, not executing: there is no claim to renew.", {"status": [call.status]}
        )
    if services.lease_renew(call_id=call.pk) is None:
        raise Conflict(
            "The lease on this call lapsed before it was renewed: report nothing, a person or the sweep settles it.",
            {"lease": ["lapsed"]},
        )
    call.refresh_from_db()
    return call


def _same_report(call: ToolCall, ok: bool, output: str) -> bool:
    remote = call.remote
    return remote.reported_at is not None and remote.reported_ok == ok and remote.reported_output == output


@transaction.atomic
def call_report(*, agent: RemoteAgent, call_id: int, key: str, ok: bool, output: str) -> ToolCall:
    """Record what executing an approved call did. The same report again changes nothing; another one is 409."""
    call = agent_call(agent, call_id, lock=True)
    _check_key(call, key, reporting=True)
    if call.status in REPORTED:
        if _same_report(call, ok, output):
            return call
        raise Conflict("A different result was reported for this call already.")
    now = timezone.now()
    status = ToolCall.Status.EXECUTED if ok else ToolCall.Status.FAILED
    fields = {"status": status, "executed_at": now, "claimed_at": call.claimed_at or now, "lease_expires_at": None}
    ToolCall.objects.filter(pk=call.pk).update(**fields)
    RemoteCall.objects.filter(pk=call.pk).update(reported_ok=ok, reported_output=output, reported_at=now)
    kind = audit.AuditEvent.Kind.EXECUTED if ok else audit.AuditEvent.Kind.FAILED
    payload = {"reported_by": agent.name, "arguments": call.approved_arguments, "ok": ok, "output": output}
    if call.status == ToolCall.Status.OUTCOME_UNKNOWN:
        payload["late"] = "after its lease lapsed and its outcome was marked unknown"
    audit.record(kind, tool_call=call, actor=agent.user, payload=payload)
    services.record_output(call=call, output=output if ok else f"Error: {output}")
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    call.refresh_from_db()
    return call
