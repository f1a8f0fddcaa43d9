"""The admin of AG-UI agents: name, endpoint, an optional secret header, the tools that need review, and the
ReviewHub tools offered to it as client tools."""

import re

from django import forms
from django.contrib import admin
from pydantic import ValidationError as PydanticError

from agents.agents import registry as agents
from approvals.admin.readonly import ReadOnly
from remote.declared import schema_problem, template_problem
from remote.models import TOOL_NAME_PATTERN, RemoteAgent
from remote.schemas import ToolIn
from remote.targets import url_problem

from .models import AguiAgent, Exchange
from .offered import offerable
from .services import agent_save

EXAMPLE = '{"refund": {"input_schema": {"type": "object", ...}, "tier": "approval", "description_template": "..."}}'


def tool_problems(name: str, declaration) -> list[str]:
    """What is wrong with one tool's declaration, in the words the agent API uses."""
    if not re.match(TOOL_NAME_PATTERN, name):
        return [f"{name!r}: a tool name is letters, digits, - and _ (at most 64)."]
    try:
        tool = ToolIn.model_validate(declaration)
    except PydanticError as exc:
        return [f"{name}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    problems = [schema_problem(tool.input_schema), template_problem(tool.description_template)]
    return [f"{name}: {p}" for p in problems if p]


def _offerable_choices() -> list[tuple[str, str]]:
    return [(tool.name, f"{tool.name} ({tool.tier}): {tool.description}") for tool in offerable()]


class AguiAgentForm(forms.ModelForm):
    offered_tools = forms.MultipleChoiceField(
        required=False,
        choices=_offerable_choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="ReviewHub's own tools sent in RunAgentInput.tools: the agent's model may call them, and ReviewHub "
        "gates each call as it gates its own agent's (policy, facts, the queue) and runs it once approved. "
        "Forbidden tools are never offered.",
    )
    secret_value = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Sent as the header's value; never shown again. Leave empty to keep the stored one.",
    )

    class Meta:
        model = AguiAgent
        fields = ["name", "title", "endpoint_url", "secret_header", "secret_value", "tools", "offered_tools"]
        help_texts = {"tools": f"By name, as the agent API declares them: {EXAMPLE}"}

    def clean_name(self):
        name = self.cleaned_data["name"]
        if agents.get(name) is not None:
            raise forms.ValidationError("ReviewHub's own agent has this name; pick another.")
        if self.instance.pk is None and RemoteAgent.objects.filter(name=name).exists():
            raise forms.ValidationError("A remote agent (the agent API) has this name; pick another.")
        return name

    def clean_endpoint_url(self):
        url = self.cleaned_data["endpoint_url"]
        if problem := url_problem(url):
            raise forms.ValidationError(problem)
        return url

    def clean_tools(self):
        tools = self.cleaned_data["tools"] or {}
        if not isinstance(tools, dict):
            raise forms.ValidationError(f"An object of declarations by tool name, e.g. {EXAMPLE}")
        problems = [p for name, declaration in tools.items() for p in tool_problems(name, declaration)]
        if problems:
            raise forms.ValidationError(problems)
        return {name: ToolIn.model_validate(d).model_dump() for name, d in tools.items()}

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        both = sorted(set(cleaned.get("offered_tools") or []) & set(cleaned.get("tools") or {}))
        if both:
            self.add_error("offered_tools", f"The agent declares its own {', '.join(both)}: offer another tool.")
        return cleaned

    def clean_secret_value(self):
        return self.cleaned_data["secret_value"] or (self.instance.secret_value if self.instance.pk else "")


@admin.register(AguiAgent)
class AguiAgentAdmin(admin.ModelAdmin):
    form = AguiAgentForm
    list_display = ["name", "title", "endpoint_url", "created_at"]
    search_fields = ["name"]

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        if not self.has_change_permission(request, obj) and obj is not None:
            return [f for f in fields if f != "secret_value"]  # a read-only page never shows the secret
        return fields

    def get_readonly_fields(self, request, obj=None):
        return ["name"] if obj is not None else []  # its calls are named after it

    def save_model(self, request, obj, form, change):
        agent_save(agent=obj)


@admin.register(Exchange)
class ExchangeAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["run", "seq", "status", "attempts", "created_at"]
    list_filter = ["status"]
    readonly_fields = ["run", "seq", "agui_run_id", "input", "status", "attempts", "last_error", "claimed_at"]
