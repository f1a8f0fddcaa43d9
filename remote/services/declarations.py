"""Tools declared once by a remote agent, versioned: a changed declaration is a new version."""

from django.db import transaction

from ..declared import schema_problem, template_problem
from ..errors import Invalid
from ..models import DeclaredTool, RemoteAgent


def _problems(declaration: dict) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    schema = declaration["input_schema"]
    if problem := schema_problem(schema):
        errors["input_schema"] = [problem]
    if problem := template_problem(declaration["description_template"]):
        errors["description_template"] = [problem]
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    unknown = [name for name in declaration["key_fields"] if name not in properties]
    if unknown:
        errors["key_fields"] = [f"Not arguments of this tool: {', '.join(unknown)}."]
    if not declaration["decisions"]:
        errors["decisions"] = ["Offer reviewers at least one decision."]
    return errors


@transaction.atomic
def tool_declare(*, agent: RemoteAgent, name: str, declaration: dict) -> DeclaredTool:
    """Store this declaration as the tool's current version: the same one again changes nothing."""
    errors = _problems(declaration)
    if errors:
        field, messages = next(iter(errors.items()))
        raise Invalid(f"{field}: {messages[0]}", errors)
    RemoteAgent.objects.select_for_update().get(pk=agent.pk)  # one writer per agent: proposals see one version
    current = DeclaredTool.objects.filter(agent=agent, name=name, current=True).first()
    if current is not None and current.declaration() == declaration:
        return current
    version = 1
    if current is not None:
        DeclaredTool.objects.filter(pk=current.pk).update(current=False)
        version = current.version + 1
    return DeclaredTool.objects.create(agent=agent, name=name, version=version, current=True, **declaration)
