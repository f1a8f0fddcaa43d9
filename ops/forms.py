from django import forms
from django.contrib.auth.models import Group

from approvals.models import Tier
from approvals.tools import registry

from .models import NotificationPreference


def tool_choices() -> list[tuple[str, str]]:
    reviewed = sorted(tool.name for tool in registry.all() if tool.tier == Tier.APPROVAL)
    return [("", "Every tool")] + [(name, name) for name in reviewed]


class PreferenceForm(forms.ModelForm):
    """One scope (a tool, a group, or both) and how to hear of its calls there."""

    class Meta:
        model = NotificationPreference
        fields = ["tool_name", "group", "browser", "email", "chat"]
        labels = {"tool_name": "Tool", "group": "Group", "chat": "Mention me in Slack"}

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.fields["tool_name"] = forms.ChoiceField(choices=tool_choices(), required=False, label="Tool")
        group = self.fields["group"]
        assert isinstance(group, forms.ModelChoiceField)  # the model's foreign key's field
        group.queryset = Group.objects.exclude(name="auditors").order_by("name")
        group.empty_label = "Every group"

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data
        scope = NotificationPreference.objects.filter(
            user=self.user, tool_name=cleaned.get("tool_name") or "", group=cleaned.get("group")
        )
        if scope.exists():
            raise forms.ValidationError("You already have a preference for this tool and group; delete it first.")
        return cleaned

    def save(self, commit=True):
        self.instance.user = self.user
        return super().save(commit)
