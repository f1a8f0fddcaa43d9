"""The seam for practice calls (planted mistakes that measure reviewers, practice/): the app that plants them
registers here when Django starts, and approvals/ asks here, never importing it.

- is_practice_run(run_id): asked before every execution claim and every resumption; a practice call is
  refused (PracticeRefused), its run is never advanced. Fail closed: a lookup that fails raises.
- finish_run(run_id): instead of a resumption (after an expiry, say): the practice run ends once nothing in it
  waits, so the sweep never finds it stuck.
- settle(call, decision): a decision on a practice call is scored and told, instead of applied.
- hide(queryset): the calls an agent may be shown, without practice calls.
- runs_sql(): a SELECT of the practice runs' ids, for the hand-written read of services/runnable.py ("" for none).
- feedback(call_id): once a practice call is decided, what its reviewer is told ("" for any other call).
"""

from collections.abc import Callable


class PracticeRefused(Exception):
    """A practice call was about to be executed: refused, in code."""


class Planted:
    def __init__(self):
        self._is_practice_run: Callable[[int], bool] = lambda run_id: False
        self._settle: Callable[..., bool] = lambda *, call, decision: False
        self._hide: Callable = lambda queryset: queryset
        self._feedback: Callable[[int], str] = lambda call_id: ""
        self._finish_run: Callable[[int], None] = lambda run_id: None
        self._runs_sql: Callable[[], str] = lambda: ""

    def register(self, *, is_practice_run, settle, hide, feedback, finish_run, runs_sql):
        self._is_practice_run, self._settle, self._hide = is_practice_run, settle, hide
        self._feedback, self._finish_run, self._runs_sql = feedback, finish_run, runs_sql

    def is_practice_run(self, run_id: int) -> bool:
        return bool(self._is_practice_run(run_id))

    def refuse(self, call) -> None:
        """Raise PracticeRefused if this call is a practice call: whatever was about to execute it stops."""
        if self.is_practice_run(call.run_id):
            raise PracticeRefused(f"Call {call.pk} is a practice call: it is never executed.")

    def settle(self, *, call, decision) -> bool:
        """Score a decision on a practice call (True), or leave a real call's to the caller (False)."""
        return bool(self._settle(call=call, decision=decision))

    def hide(self, queryset):
        return self._hide(queryset)

    def runs_sql(self) -> str:
        return self._runs_sql()

    def feedback(self, call_id: int) -> str:
        return self._feedback(call_id)

    def finish_run(self, run_id: int) -> None:
        self._finish_run(run_id)


planted = Planted()
