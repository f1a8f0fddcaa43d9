"""The admin for rules as data: policy rules and turn rules (each with its shadow record), per-tool review
settings, and the record of what shadow rules would have decided or paused."""

from django import forms
from django.contrib import admin
from django.db.models import Count

from approvals.admin.filters import RefuseUnstorableQuery
from approvals.admin.readonly import ReadOnly
from approvals.lib.storable import json_problems
from approvals.models import PolicyRule, ShadowResult, ToolSetting, TurnRule, TurnShadow
from approvals.policy.turn_rules import sets_a_condition
from approvals.tools import registry


def _tool_choices():
    return [(tool.name, tool.name) for tool in sorted(registry.declared(), key=lambda t: t.name)]


class RuleAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    """What the admin of every kind of rule shares: ordered, enabled or in shadow, and its shadow record."""

    list_editable = ["order", "enabled", "shadow"]
    list_select_related = ["group"]
    readonly_fields = ["shadow_record"]
    EVALUATION = ("order", "enabled", "shadow", "shadow_record")  # the last section of either rule's page


class PolicyRuleForm(forms.ModelForm):
    tool_name = forms.ChoiceField(choices=_tool_choices, help_text="Tool this rule applies to.")

    class Meta:
        model = PolicyRule
        fields = "__all__"

    def clean(self):
        super().clean()
        data = self.cleaned_data
        tool = registry.named(data.get("tool_name", ""))
        field = data.get("field")
        if tool is not None and field:
            known = tool.args_model.model_json_schema().get("properties", {})
            if field not in known:
                self.add_error("field", f"{tool.name} has no argument {field!r}; it has: {', '.join(known)}.")
        if problems := json_problems(data.get("value")):  # NUL, NaN, deep nesting: jsonb refuses them
            self.add_error("value", next(iter(problems.values()))[0])
        return data


@admin.register(PolicyRule)
class PolicyRuleAdmin(RuleAdmin):
    form = PolicyRuleForm
    list_display = [
        "name",
        "tool_name",
        "field",
        "operator",
        "value",
        "outcome",
        "required_approvals",
        "group",
        "order",
        "enabled",
        "shadow",
        "shadow_record",
    ]
    list_filter = ["tool_name", "outcome", "enabled", "shadow"]
    fieldsets = [
        (None, {"fields": ["name", "tool_name", ("field", "operator", "value")]}),
        ("Outcome", {"fields": ["outcome", "required_approvals", "group", "high_impact"]}),
        ("Evaluation", {"fields": RuleAdmin.EVALUATION}),
    ]

    @admin.display(description="Shadow record")
    def shadow_record(self, rule: PolicyRule) -> str:
        return rule.shadow_summary() if rule.pk else "—"


@admin.register(ToolSetting)
class ToolSettingAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
    list_display = ["tool_name", "group", "timeout_minutes", "warn_minutes", "on_expiry", "escalate_to", "high_impact"]
    list_select_related = ["group", "escalate_to"]
    fieldsets = [
        (None, {"fields": ["tool_name", "group"]}),
        ("Time limit", {"fields": ["timeout_minutes", "warn_minutes", "on_expiry", "escalate_to"]}),
        ("High impact", {"fields": ["high_impact", "high_impact_seconds", "confirm_field"]}),
    ]

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "tool_name":
            return forms.ChoiceField(choices=_tool_choices, label="Tool")
        return super().formfield_for_dbfield(db_field, request, **kwargs)


@admin.register(ShadowResult)
class ShadowResultAdmin(ReadOnly, RefuseUnstorableQuery, admin.ModelAdmin):
    """What shadow rules would have decided; written by the application only."""

    list_display = ["tool_call", "rule", "outcome", "verdict", "agreed", "created_at"]
    list_filter = ["rule", "agreed"]
    list_select_related = ["tool_call", "rule"]


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
class TurnRuleAdmin(RuleAdmin):
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
    list_filter = ["agent", "enabled", "shadow"]
    fieldsets = [
        (None, {"fields": ["name"]}),
        ("Which turns", {"fields": ["agent", ("from_step", "until_step"), "words", "every_turn"]}),
        ("Who decides", {"fields": ["group"]}),
        ("Evaluation", {"fields": RuleAdmin.EVALUATION}),
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
