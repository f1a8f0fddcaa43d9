from django import template

from approvals.kinds import revision as revisions

register = template.Library()


@register.simple_tag
def previous_round(call):
    """{% previous_round call as prev %}: the round before a revision (approvals/kinds/revision.py), or None."""
    return revisions.previous_round(call)
