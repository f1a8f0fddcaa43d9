"""The admin: per tool (and optionally group), whether practice calls are planted, how often, which mistakes;
and the practice calls themselves, listed only as approvals/access/ allows (undecided ones: the dedicated
permission only)."""

from django import forms
from django.contrib import admin

from approvals.access import practice_calls_for
from approvals.admin.readonly import ReadOnly
from approvals.tools import registry

from .models import PracticeCall, PracticeSetting


def _tools_with_mistakes():
    return [(tool.name, tool.name) for tool in registry.all() if tool.mistakes]


def _mistake_choices():
    return [(m.name, f"{tool.name}: {m.label}") for tool in registry.all() for m in tool.mistakes]


class PracticeSettingForm(forms.ModelForm):
    tool_name = forms.ChoiceField(choices=_tools_with_mistakes, help_text="Tools that declare mistakes to plant.")
    mistakes = forms.MultipleChoiceField(
        choices=_mistake_choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The mistakes to plant (none chosen: all that the tool declares).",
    )

    class Meta:
        model = PracticeSetting
        fields = ["tool_name", "group", "enabled", "rate", "mistakes"]


@admin.register(PracticeSetting)
class PracticeSettingAdmin(admin.ModelAdmin):
    form = PracticeSettingForm
    list_display = ["tool_name", "group", "enabled", "rate", "mistakes"]
    list_filter = ["enabled", "tool_name"]


@admin.register(PracticeCall)
class PracticeCallAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ["planted_at", "tool_name", "mistake", "tool_call", "reviewer", "outcome", "seconds_to_decide"]
    list_filter = ["outcome", "tool_name", "mistake"]
    readonly_fields = [f.name for f in PracticeCall._meta.fields]

    def get_queryset(self, request):
        return practice_calls_for(request.user, super().get_queryset(request))
