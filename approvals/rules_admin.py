"""The admin for rules as data: policy rules (with their shadow record) and per-tool review settings."""

from django import forms
from django.contrib import admin

from .admin_filters import RefuseUnstorableQuery
from .admin_readonly import ReadOnly
from .models import PolicyRule, ShadowResult, ToolSetting
from .storable import json_problems
from .tools import registry


def _tool_choices():
    return [(tool.name, tool.name) for tool in sorted(registry.declared(), key=lambda t: t.name)]


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
class PolicyRuleAdmin(RefuseUnstorableQuery, admin.ModelAdmin):
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
    list_editable = ["order", "enabled", "shadow"]
    list_filter = ["tool_name", "outcome", "enabled", "shadow"]
    list_select_related = ["group"]
    readonly_fields = ["shadow_record"]
    fieldsets = [
        (None, {"fields": ["name", "tool_name", ("field", "operator", "value")]}),
        ("Outcome", {"fields": ["outcome", "required_approvals", "group", "high_impact"]}),
        ("Evaluation", {"fields": ["order", "enabled", "shadow", "shadow_record"]}),
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
