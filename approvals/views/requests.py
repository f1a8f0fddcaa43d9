"""The request a reviewer's view receives, as the type checker sees it: no behaviour of its own.

Every such view is behind login_required, so its user is a real user, and django-htmx's middleware
(settings.MIDDLEWARE) gives every request its `htmx` details.
"""

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class ReviewerRequest(HttpRequest):
    user: User
    htmx: HtmxDetails
