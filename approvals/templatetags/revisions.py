from django import template

from approvals import revisions

register = template.Library()


@register.simple_tag
def previous_round(call):
    """{% previous_round call as prev %}: the round before a revision (approvals/revisions.py), or None."""
    return revisions.previous_round(call)
