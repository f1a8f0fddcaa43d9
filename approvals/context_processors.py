from .access import is_reviewer, visible_calls
from .models import ToolCall


def queue_count(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "queue_count": visible_calls(user, ToolCall.objects.filter(status=ToolCall.Status.PENDING)).count(),
        "is_reviewer": is_reviewer(user),
    }
