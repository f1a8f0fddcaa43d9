"""The four risk tiers a tool is in, enforced in code (approvals/policy/): a module of its own so that the tool
registry and the models both read it without reading each other."""

from django.db import models


class Tier(models.TextChoices):
    READ_ONLY = "read_only", "Read-only"
    REVERSIBLE = "reversible", "Reversible"
    APPROVAL = "approval", "Approval required"
    FORBIDDEN = "forbidden", "Forbidden"
