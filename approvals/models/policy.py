"""Policy as data: rules, per-tool settings, and what shadow rules would have decided."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Count, Q

from .calls import Decision, ToolCall


class PolicyRule(models.Model):
    """A rule as data: for a tool, a condition on one argument, and an outcome.

    Rules are evaluated in order; the first enabled rule whose condition holds
    decides. Without a matching rule, the tool's tier decides. A shadow rule
    never decides: it records what it would have decided, next to what people did.
    """

    class Outcome(models.TextChoices):
        RUN = "run", "Run without review"
        REVIEW = "review", "Require review (by N distinct reviewers)"
        FORBID = "forbid", "Forbid"

    class Operator(models.TextChoices):
        LE = "<=", "<="
        LT = "<", "<"
        GE = ">=", ">="
        GT = ">", ">"
        EQ = "==", "=="
        NE = "!=", "!="
        ANY = "any", "always"

    name = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200, help_text="Tool this rule applies to.")
    field = models.CharField(max_length=100, blank=True, help_text="Argument name, e.g. amount.")
    operator = models.CharField(max_length=8, choices=Operator.choices, default=Operator.ANY)
    value = models.JSONField(null=True, blank=True, help_text="JSON value to compare with, e.g. 20.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    required_approvals = models.PositiveSmallIntegerField(
        default=1, help_text="For “require review”: how many different reviewers must approve."
    )
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="For “require review”: only members of this group may decide matching calls.",
    )
    order = models.PositiveIntegerField(default=100)
    enabled = models.BooleanField(default=True)
    shadow = models.BooleanField(
        default=False,
        help_text="Shadow mode: never decides; records what it would have decided next to the human decision.",
    )
    high_impact = models.BooleanField(
        default=False,
        help_text="For “require review”: a high-impact gate on matching calls (Approve after a time on the card, "
        "and the typed confirmation the tool's settings name).",
    )

    class Meta:
        ordering = ["order", "id"]

    def __str__(self):
        return self.name

    def clean(self):
        if self.operator != self.Operator.ANY and not self.field:
            raise ValidationError({"field": "Name the argument this condition compares."})
        if self.outcome != self.Outcome.REVIEW and (self.required_approvals != 1 or self.group_id or self.high_impact):
            raise ValidationError("Approvals, a group and high impact only apply to the outcome “require review”.")
        if self.required_approvals < 1:
            raise ValidationError({"required_approvals": "At least one approval."})

    def shadow_counts(self) -> dict[str, int]:
        """The calls this rule matched in shadow mode, how many people decided, how many it agreed with."""
        return self.shadow_results.aggregate(
            matched=Count("id"),
            compared=Count("id", filter=Q(agreed__isnull=False)),
            agreed=Count("id", filter=Q(agreed=True)),
        )

    def shadow_summary(self) -> str:
        """How often this rule, in shadow mode, agreed with the people who decided."""
        stats = self.shadow_counts()
        if not stats["matched"]:
            return "no calls matched yet"
        if not stats["compared"]:
            return f"matched {stats['matched']} call(s); none decided by a person yet"
        percent = round(100 * stats["agreed"] / stats["compared"])
        agreed = f"agreed {stats['agreed']} of {stats['compared']} decisions ({percent}%)"
        return f"{agreed}; matched {stats['matched']} call(s)"

    def describe(self) -> str:
        outcome = self.get_outcome_display().lower()
        if self.outcome == self.Outcome.REVIEW:
            outcome = "require " + (f"{self.required_approvals} approvals" if self.required_approvals > 1 else "review")
            if self.group is not None:
                outcome += f" by “{self.group.name}”"
        if self.operator == self.Operator.ANY:
            return f"{self.tool_name}: always {outcome}"
        return f"{self.tool_name}: {self.field} {self.operator} {self.value} → {outcome}"


class ToolSetting(models.Model):
    """How one tool's calls are reviewed: by whom, how long they may wait, and what happens then."""

    class OnExpiry(models.TextChoices):
        REJECT = "reject", "Reject"
        ESCALATE = "escalate", "Escalate to a group (once), then reject"

    tool_name = models.CharField(max_length=200, unique=True)
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Only members of this group may decide this tool's calls. Empty: any reviewer.",
    )
    timeout_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="How long a call may wait for a decision. Empty: the site default."
    )
    warn_minutes = models.PositiveIntegerField(
        default=10, help_text="Flag the call in the queue and notify its reviewers this long before the deadline."
    )
    on_expiry = models.CharField(max_length=16, choices=OnExpiry.choices, default=OnExpiry.REJECT)
    escalate_to = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # The high-impact gate (approvals/policy/friction.py): on every call of the tool, or on those a rule marks.
    high_impact = models.BooleanField(
        default=False,
        help_text="Every call of this tool is high impact: no default button, Approve only after a time on the "
        "card, and the typed confirmation below. A policy rule can also mark some calls high impact.",
    )
    high_impact_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="High impact: Approve is enabled this many seconds after the card is shown. Empty: 10.",
    )
    confirm_field = models.CharField(
        max_length=100,
        blank=True,
        help_text="High impact: the argument the reviewer types to approve (e.g. amount, to, order_id). "
        "Empty: no typed confirmation.",
    )

    class Meta:
        ordering = ["tool_name"]

    def __str__(self):
        return self.tool_name

    def clean(self):
        if self.on_expiry == self.OnExpiry.ESCALATE and not self.escalate_to_id:
            raise ValidationError({"escalate_to": "Name the group that overdue calls go to."})

    def timeout(self) -> timedelta:
        if self.timeout_minutes:
            return timedelta(minutes=self.timeout_minutes)
        return timedelta(seconds=settings.REVIEW_EXPIRY_SECONDS)

    def warn_before(self) -> timedelta:
        return min(timedelta(minutes=self.warn_minutes), self.timeout() / 2)

    @property
    def escalates(self) -> bool:
        return self.on_expiry == self.OnExpiry.ESCALATE and self.escalate_to_id is not None


class ShadowResult(models.Model):
    """What a shadow rule would have decided on one call, and what people decided."""

    rule = models.ForeignKey(PolicyRule, on_delete=models.CASCADE, related_name="shadow_results")
    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="shadow_results")
    outcome = models.CharField(max_length=16, choices=PolicyRule.Outcome.choices)
    verdict = models.CharField(max_length=16, choices=Decision.Verdict.choices, blank=True)
    # Run agrees with an approval as proposed, forbid with a reject; anything else is not compared.
    agreed = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["rule", "tool_call"], name="shadow_one_per_rule_and_call")]

    @staticmethod
    def agreement(outcome: str, verdict: str) -> bool | None:
        if verdict == Decision.Verdict.EXPIRE or outcome == PolicyRule.Outcome.REVIEW:
            return None
        if outcome == PolicyRule.Outcome.RUN:
            return verdict == Decision.Verdict.APPROVE
        return verdict == Decision.Verdict.REJECT


class PolicyStamp(models.Model):
    """One row whose stamp changes, in the same transaction, with every change of a rule, a tool setting or a
    group: a process's snapshot of policy is current while the stamp it was read under is (policy_snapshot.py)."""

    stamp = models.CharField(max_length=32)
