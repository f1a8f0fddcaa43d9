"""What practice is planted (PracticeSetting) and each planted call with its score (PracticeCall)."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models

from approvals.models import Run, ToolCall


class PracticeSetting(models.Model):
    """Practice calls for one tool (and, optionally, only for its calls that a group decides)."""

    tool_name = models.CharField(max_length=200, help_text="The tool whose calls get practice copies.")
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="Only calls this group decides (empty: any call of the tool).",
    )
    enabled = models.BooleanField(default=True)
    rate = models.PositiveIntegerField(default=50, help_text="One practice call for every N real proposals.")
    mistakes = models.JSONField(
        default=list, blank=True, help_text="Names of the tool's declared mistakes to plant (empty: all of them)."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tool_name", "group"], name="practicesetting_unique_tool")]

    def __str__(self):
        return f"Practice for {self.tool_name}: 1 in {self.rate}" + ("" if self.enabled else " (off)")

    def clean(self):
        from approvals.tools import registry

        tool = registry.get(self.tool_name)
        if tool is None:
            raise ValidationError({"tool_name": "There is no registered tool of this name."})
        if not tool.mistakes:
            raise ValidationError({"tool_name": "This tool declares no mistakes to plant."})
        if self.rate < 1:
            raise ValidationError({"rate": "One in at least 1."})
        declared = {mistake.name for mistake in tool.mistakes}
        unknown = [name for name in self.mistakes or [] if name not in declared]
        if not isinstance(self.mistakes, list) or unknown:
            raise ValidationError({"mistakes": f"Choose among: {', '.join(sorted(declared))}."})


class PracticeCall(models.Model):
    """One planted call: its own run (never advanced), the real call it copies, the mistake, the score."""

    class Outcome(models.TextChoices):
        WAITING = "waiting", "Not decided yet"
        CAUGHT = "caught", "Caught"
        MISSED = "missed", "Missed"
        NOT_SEEN = "not_seen", "Not seen (expired)"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="practice")
    tool_call = models.OneToOneField(ToolCall, null=True, on_delete=models.CASCADE, related_name="practice")
    source = models.ForeignKey(ToolCall, on_delete=models.PROTECT, related_name="+", db_index=False)
    tool_name = models.CharField(max_length=200)
    mistake = models.CharField(max_length=100)
    explanation = models.TextField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.WAITING)
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    planted_at = models.DateTimeField(auto_now_add=True, db_index=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    seconds_to_decide = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-planted_at", "-id"]
        permissions = [("audit_practice", "Can list practice calls before they are decided")]

    def __str__(self):
        return f"Practice {self.tool_name} ({self.mistake})"

    @property
    def settled_outcome(self) -> str:
        """The outcome, reading an expired call (expiry is the deadline's, not ours) as not seen."""
        if self.outcome == self.Outcome.WAITING and self.tool_call and self.tool_call.status == ToolCall.Status.EXPIRED:
            return self.Outcome.NOT_SEEN
        return self.outcome

    def feedback(self) -> str:
        """What the reviewer is told at once: what the mistake was, and what they did."""
        what_they_did: dict[str, str] = {
            self.Outcome.CAUGHT: "You caught it.",
            self.Outcome.MISSED: "You approved it.",
            self.Outcome.NOT_SEEN: "Nobody decided it before its deadline.",
        }
        said = what_they_did.get(self.settled_outcome)
        if said is None:
            return ""
        return f"This was a practice call: {self.explanation.rstrip('.')}. {said}"
