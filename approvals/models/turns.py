"""Which model turns pause for a person, as data (the admin edits them like policy rules)."""

from django.contrib.auth.models import Group
from django.db import models

from .runs import Run


class TurnRule(models.Model):
    """Pause a model turn before the model answers, for a person to continue, add a note, or write the reply.

    A rule matches a turn when every condition it sets holds: the agent, the step range, words in the
    transcript (any of them), or none of those with `every_turn`. The first enabled, non-shadow matching
    rule pauses the turn; a shadow rule never pauses, it records that it would have (TurnShadow).
    """

    name = models.CharField(max_length=200)
    agent = models.CharField(max_length=100, blank=True, help_text="The agent's name. Empty: every agent.")
    every_turn = models.BooleanField(default=False, help_text="Pause every turn (of the agent, in the steps).")
    from_step = models.PositiveIntegerField(null=True, blank=True, help_text="From this model turn on (1 = first).")
    until_step = models.PositiveIntegerField(null=True, blank=True, help_text="Up to this model turn.")
    words = models.TextField(
        blank=True, help_text="Pause when the transcript mentions any of these (one per line, case-insensitive)."
    )
    group = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Only members of this group may decide paused turns. Empty: any reviewer.",
    )
    order = models.PositiveIntegerField(default=100)
    enabled = models.BooleanField(default=True)
    shadow = models.BooleanField(
        default=False, help_text="Shadow mode: never pauses; records the turns it would have paused."
    )

    class Meta:
        ordering = ["order", "id"]

    def __str__(self):
        return self.name


class TurnShadow(models.Model):
    """A turn a shadow rule would have paused."""

    rule = models.ForeignKey(TurnRule, on_delete=models.CASCADE, related_name="shadow_results")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    step = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["rule", "run", "step"], name="turnshadow_one_per_turn")]
