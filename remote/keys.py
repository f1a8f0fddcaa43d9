"""The execution key: what lets a remote agent execute exactly what was approved (derived, never stored)."""

import hmac

from django.conf import settings

from approvals.lib.hashing import args_hash
from approvals.models import ToolCall


def execution_key(call: ToolCall) -> str:
    """The key of this call's approved arguments: a call approved again with other arguments gets another."""
    message = f"reviewhub-execution:{call.pk}:{args_hash(call.approved_arguments)}"
    return "ek_" + hmac.new(settings.SECRET_KEY.encode(), message.encode(), "sha256").hexdigest()[:40]
