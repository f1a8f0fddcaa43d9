"""Outcome unknown: a claim lapsed without a report on a tool that is not idempotent (services/leases.py), so
nobody knows whether it ran. A person settles it, once, with one of three answers:

- "ran": it did; the output they record is the call's output and the run goes on;
- "not_run": it did not; it runs now, once (approved again, claimed as any approved call);
- "fail": fail the run with their reason, for someone to Retry.
"""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from approvals import audit, live

from ..access import can_settle
from ..models import ToolCall
from .errors import AlreadyDecided, EditInvalid, require
from .runs import request_resume, run_fail
from .transcript import record_output

ANSWERS = ("ran", "not_run", "fail")


def _problems(answer: str, output: str, reason: str) -> dict[str, list[str]]:
    if answer not in ANSWERS:
        return {"answer": ["Say whether it ran, did not run, or the run should fail."]}
    if answer == "ran" and not output.strip():
        return {"output": ["Write what it did: the output the agent reads as the tool's result."]}
    if answer == "fail" and not reason.strip():
        return {"reason": ["Give the reason the run fails with."]}
    return {}


def _settled_fields(answer: str, output: str, reason: str) -> dict:
    now = timezone.now()
    if answer == "ran":
        return {"status": ToolCall.Status.EXECUTED, "executed_at": now}
    if answer == "fail":
        return {"status": ToolCall.Status.FAILED, "executed_at": now}
    return {"status": ToolCall.Status.APPROVED, "claimed_at": None}  # checked and claimed again, as when approved


@transaction.atomic
def toolcall_settle(*, call_id: int, reviewer: User, answer: str, output: str = "", reason: str = "") -> ToolCall:
    """Settle an outcome-unknown call with `answer` ("ran" with `output`, "not_run", "fail" with `reason`).

    Bad input: EditInvalid naming the field, nothing changed. Settled already: AlreadyDecided."""
    call = ToolCall.objects.select_for_update(of=("self",)).select_related("run").get(pk=call_id)
    require(can_settle(reviewer, call))
    if call.status != ToolCall.Status.OUTCOME_UNKNOWN:
        raise AlreadyDecided(call, None)
    if errors := _problems(answer, output, reason):
        raise EditInvalid(errors)
    ToolCall.objects.filter(pk=call.pk).update(**_settled_fields(answer, output, reason))
    payload = {"answer": answer, "output": output, "reason": reason}
    audit.record(audit.AuditEvent.Kind.OUTCOME_SETTLED, tool_call=call, actor=reviewer, payload=payload)
    if answer == "ran":
        record_output(call=call, output=output)
    elif answer == "fail":
        record_output(call=call, output=f"Error: {reason} (settled by {reviewer.get_username()})")
        run_fail(run=call.run, error=f"{call.tool_name} #{call.pk}: its outcome was unknown; {reason}")
    if answer != "fail":
        request_resume(call.run_id, approved=answer == "not_run")
    live.call_changed(call.pk)
    live.run_changed(call.run_id)
    call.refresh_from_db()
    return call
