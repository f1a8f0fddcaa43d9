"""What the admin's lists accept from the URL: filters that cost no query (or one small one),
and a guard that refuses a query string the database could not take before any filter runs.

PostgreSQL refuses a NUL character in any text it is given, so `?tool=%00` would fail
in the middle of a query (or, in a streamed export, in the middle of the response).
"""

from datetime import date, timedelta
from itertools import chain

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponseBadRequest

from approvals import insight
from approvals.admin import search
from approvals.admin.readonly import ModelAdminMixin
from approvals.audit.export import parse_moment
from approvals.lib import storable
from approvals.models import Decision
from approvals.tools import registry


def refused_query(request: HttpRequest) -> HttpResponseBadRequest | None:
    """A 400 naming the problem when a name or value in the query string cannot be stored, else None."""
    texts = chain.from_iterable([key, *values] for key, values in request.GET.lists())
    problem = storable.texts_problem(texts)
    if not problem:
        return None
    return HttpResponseBadRequest(f"A filter or search value in this address {problem[0].lower()}{problem[1:]}")


class RefuseUnstorableQuery(ModelAdminMixin):
    """A ModelAdmin mixin: the list answers 400 before any filter, search or count runs."""

    def changelist_view(self, request, extra_context=None):
        return refused_query(request) or super().changelist_view(request, extra_context)


class DateRangeFilter(admin.DateFieldListFilter):
    """Quick ranges, and a from/before form; plain dates are days in the current time zone."""

    template = "admin/approvals/date_range_filter.html"

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        today = self.links[1][1][self.lookup_kwarg_since]
        assert isinstance(today, date)  # Django's "Today" link: a date, or a datetime for a DateTimeField
        tomorrow = self.links[1][1][self.lookup_kwarg_until]
        self.links = (
            self.links[:3]
            + (
                (
                    "Past 30 days",
                    {self.lookup_kwarg_since: today - timedelta(days=30), self.lookup_kwarg_until: tomorrow},
                ),
            )
            + self.links[3:]
        )

    def queryset(self, request, queryset):
        try:
            since = parse_moment(self.date_params.get(self.lookup_kwarg_since))
            before = parse_moment(self.date_params.get(self.lookup_kwarg_until))
        except ValueError as exc:
            raise IncorrectLookupParameters(exc)
        if since:
            queryset = queryset.filter(**{self.lookup_kwarg_since: since})
        if before:
            queryset = queryset.filter(**{self.lookup_kwarg_until: before})
        return queryset

    def choices(self, changelist):
        # For the from/before form: the dates chosen, and the other filters as hidden fields.
        self.form_since = (self.date_params.get(self.lookup_kwarg_since) or "")[:10]
        self.form_before = (self.date_params.get(self.lookup_kwarg_until) or "")[:10]
        self.other_params = [(k, v) for k, v in changelist.params.items() if not k.startswith(self.field_generic)]
        yield from super().choices(changelist)


class ToolFilter(admin.SimpleListFilter):
    """The registered tools; no query."""

    title = "tool"
    parameter_name = "tool"
    field = "tool_name"

    def lookups(self, request, model_admin):
        return [(tool.name, tool.name) for tool in registry.all()]

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field: self.value()}) if self.value() else queryset


class CallToolFilter(ToolFilter):
    field = "tool_call__tool_name"


class OutcomeFilter(admin.SimpleListFilter):
    """What became of a call, as the insight page counts it."""

    title = "outcome"
    parameter_name = "outcome"

    def lookups(self, request, model_admin):
        return insight.ALL_OUTCOMES

    def queryset(self, request, queryset):
        value = self.value()
        if value is not None and value in dict(insight.ALL_OUTCOMES):
            return queryset.filter(insight.outcome_filter(value))
        return queryset


class ReviewerFilter(admin.SimpleListFilter):
    """People who have decided at least one call (one small query)."""

    title = "reviewer"
    parameter_name = "reviewer"
    field = "reviewer_id"

    def lookups(self, request, model_admin):
        users = get_user_model().objects.filter(Exists(Decision.objects.filter(reviewer=OuterRef("pk"))))
        return [(user.pk, user.get_username()) for user in users.order_by("username")]

    def queryset(self, request, queryset):
        reviewer_id = search.number(self.value() or "")
        return queryset if reviewer_id is None else queryset.filter(**{self.field: reviewer_id})


class CallReviewerFilter(ReviewerFilter):
    def queryset(self, request, queryset):
        reviewer_id = search.number(self.value() or "")
        if reviewer_id is None:
            return queryset
        return queryset.filter(pk__in=Decision.objects.filter(reviewer_id=reviewer_id).values("tool_call_id"))


class ActorFilter(ReviewerFilter):
    """Events recorded in a reviewer's name."""

    title = "reviewer (actor)"
    parameter_name = "actor"
    field = "actor_id"
