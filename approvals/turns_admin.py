"""The admin for turn rules (which model turns pause for a person), in the style of the policy rules,
and the record of what shadow turn rules would have paused."""

from django import forms
from django.contrib import admin
from django.db.models import Count

from .admin_filters import RefuseUnstorableQuery
from .admin_readonly import ReadOnly
from .models import TurnRule, TurnShadow
from .turns import sets_a_condition


class TurnRuleForm(forms.ModelForm):
    class Meta:
        model = TurnRule
        fields = "__all__"

    def clean(self):
        super().clean()
        data = self.cleaned_data
        start, end = data.get("from_step"), data.get("until_step")
        if start and end and end < start:
            self.add_error("until_step", "The last turn comes before the first; swap them.")
        rule = TurnRule(**{k: v for k, v in data.items() if k in ("agent", "from_step", "until_step", "words")})
        if not data.get("every_turn") and not sets_a_condition(rule):
            self.add_error(
                None, "Set an agent, a step range or words, or tick “every turn”: this rule matches nothing."
            )
        return data


@admin.register(TurnRule)
class TurnRuleAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    form = TurnRuleForm
    list_display = [
        "name",
        "agent",
        "steps",
        "words_list",
        "every_turn",
        "group",
        "order",
        "enabled",
        "shadow",
        "shadow_record",
    ]
    list_editable = ["order", "enabled", "shadow"]
    list_filter = ["agent", "enabled", "shadow"]
    list_select_related = ["group"]
    readonly_fields = ["shadow_record"]
    fieldsets = [
        (None, {"fields": ["name"]}),
        ("Which turns", {"fields": ["agent", ("from_step", "until_step"), "words", "every_turn"]}),
        ("Who decides", {"fields": ["group"]}),
        ("Evaluation", {"fields": ["order", "enabled", "shadow", "shadow_record"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(held_in_shadow=Count("shadow_results"))

    @admin.display(description="Steps")
    def steps(self, rule: TurnRule) -> str:
        if not rule.from_step and not rule.until_step:
            return "all"
        return f"{rule.from_step or 1}–{rule.until_step or '…'}"

    @admin.display(description="Words")
    def words_list(self, rule: TurnRule) -> str:
        return ", ".join(line.strip() for line in rule.words.splitlines() if line.strip()) or "—"

    @admin.display(description="Shadow record")
    def shadow_record(self, rule: TurnRule) -> str:
        if not rule.pk:
            return "—"
        count = getattr(rule, "held_in_shadow", None)
        count = rule.shadow_results.count() if count is None else count
        if not count:
            return "would have paused no turns yet" if rule.shadow else "—"
        return f"would have paused {count} turn{'s' if count != 1 else ''}"


@admin.register(TurnShadow)
class TurnShadowAdmin(ReadOnly, RefuseUnstorableQuery, admin.ModelAdmin):
    """The turns shadow turn rules would have paused; written by the application only."""

    list_display = ["rule", "run", "step", "created_at"]
    list_filter = ["rule"]
    list_select_related = ["rule", "run"]
