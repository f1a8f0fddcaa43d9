"""Everything that writes the record, one module per step of the flow:

- runs: a run's life (started, a turn claimed, failed, completed, retried, cancelled)
- transcript: appending rows; each tool call's output given to the model once
- gate: every proposed tool call refused, run at once, or held for a person
- decisions: approve, edit, reject, respond — one transaction each
- turns, turn_decisions: a model turn held for a person (continue, add a note, write the reply)
- claims: "being reviewed by X"
- deadlines: warn, escalate, expire
- sweep: every stuck run taken further, or failed with the reason
- execution: an approved call run exactly once, exactly as approved; runnable: the approved calls as it reads them
- leases: a claim on an execution renewed while it runs; a lapsed one released or "outcome unknown" (and what
  another claimant needs: lease_until, lease_retake)
- outcomes: a person settles an outcome-unknown call (it ran, run it now, fail the run)
- undo, previews (dry run, an edit's changes), shadow rules (and a learned rule added and replayed), errors

Callers import from here: `from approvals import services; services.toolcall_decide(...)`.
"""

from .claims import toolcall_review_release, toolcall_review_start
from .deadlines import deadlines_apply, expire_overdue, toolcall_expire, toolcall_warn
from .decisions import tool_for, toolcall_approve_many, toolcall_decide, toolcall_respond
from .errors import (
    AlreadyDecided,
    DecisionError,
    EditInvalid,
    HighImpactRefused,
    NotAllowed,
    RuleAlreadyAdded,
    RuleNotProposed,
    StaleView,
    UndoError,
    WarningNotAcknowledged,
)
from .execution import toolcall_claim, toolcall_execute
from .gate import ProposedCall, model_reply_record, step_record
from .leases import (
    lease_lapse,
    lease_renew,
    lease_retake,
    lease_until,
    leases_lapse,
)
from .outcomes import toolcall_settle
from .previews import toolcall_edit_changes, toolcall_preview
from .questions import AnswerRefused, question_from_agent, toolcall_answer
from .renewals import Renewing
from .runnable import EXECUTABLE, approved_in_run, runnable_calls
from .runs import (
    request_resume,
    run_begin_turn,
    run_cancel,
    run_complete,
    run_create,
    run_fail,
    run_open,
    run_resumed,
    run_retry,
    run_set_status,
    turn_renew,
)
from .shadow import Added, learned_rule_add, shadow_replay
from .sweep import Stall, run_stall, run_take_further, stuck_runs, sweep_apply
from .transcript import message_append, record_output, run_lock, step_is_answered
from .turn_decisions import turn_decide, turn_expire
from .turns import turn_request, turn_review
from .undo import toolcall_undo

__all__ = [
    "Added",
    "AlreadyDecided",
    "AnswerRefused",
    "EXECUTABLE",
    "DecisionError",
    "EditInvalid",
    "NotAllowed",
    "RuleAlreadyAdded",
    "RuleNotProposed",
    "ProposedCall",
    "Stall",
    "StaleView",
    "UndoError",
    "HighImpactRefused",
    "WarningNotAcknowledged",
    "deadlines_apply",
    "expire_overdue",
    "learned_rule_add",
    "lease_lapse",
    "lease_retake",
    "lease_renew",
    "lease_until",
    "Renewing",
    "leases_lapse",
    "message_append",
    "model_reply_record",
    "record_output",
    "request_resume",
    "run_begin_turn",
    "run_cancel",
    "run_complete",
    "run_create",
    "run_open",
    "run_fail",
    "run_lock",
    "run_resumed",
    "turn_renew",
    "run_retry",
    "run_set_status",
    "run_stall",
    "run_take_further",
    "runnable_calls",
    "approved_in_run",
    "step_is_answered",
    "step_record",
    "stuck_runs",
    "shadow_replay",
    "sweep_apply",
    "tool_for",
    "question_from_agent",
    "toolcall_answer",
    "toolcall_approve_many",
    "toolcall_claim",
    "toolcall_decide",
    "toolcall_edit_changes",
    "toolcall_execute",
    "toolcall_expire",
    "toolcall_preview",
    "toolcall_respond",
    "toolcall_review_release",
    "toolcall_settle",
    "toolcall_review_start",
    "toolcall_undo",
    "toolcall_warn",
    "turn_decide",
    "turn_expire",
    "turn_request",
    "turn_review",
]
