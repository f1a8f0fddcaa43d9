"""Looking ahead without deciding: what a call would do (the tool's dry run), what an edit would change."""

from approvals.lib.text import arguments_diff

from ..models import ToolCall
from ..tools import ArgumentsInvalid, registry
from .decisions import edited_arguments
from .errors import EditInvalid


def toolcall_preview(*, call: ToolCall) -> str:
    """What the call would do, from the tool's simulate(); nothing is written."""
    tool = registry.for_call(call)
    if tool is None or call.review_arguments is None:
        return "No preview: the tool or its arguments are unknown."
    try:
        return tool.preview(tool.parse(call.review_arguments))
    except ArgumentsInvalid as exc:
        return f"No preview: {exc.message()}"
    except Exception as exc:
        return f"No preview: the simulation failed ({exc})."


def toolcall_edit_changes(*, call: ToolCall, arguments: dict) -> list[dict]:
    """Validate an edit and say field by field how it differs from the model's arguments."""
    if not call.is_pending or registry.for_call(call) is None:
        raise EditInvalid({"__all__": ["This call can no longer be edited."]})
    return arguments_diff(call.arguments, edited_arguments(call, arguments))
