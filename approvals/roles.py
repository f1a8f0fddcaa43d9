"""The groups ReviewHub's roles are: reviewers decide calls, auditors read the whole record and change nothing.

Other groups (a team, "senior") narrow which calls a reviewer may decide; they carry no permission of their own."""

from django.contrib.auth.models import Group, Permission

from .access import AUDITORS, REVIEW_PERMISSION

REVIEWERS = "reviewers"
READ_APPS = ["approvals", "shop", "remote", "gateway", "agui"]


def reviewers_group() -> Group:
    group, _ = Group.objects.get_or_create(name=REVIEWERS)
    app_label, codename = REVIEW_PERMISSION.split(".")
    group.permissions.add(Permission.objects.get(codename=codename, content_type__app_label=app_label))
    return group


def auditors_group() -> Group:
    group, _ = Group.objects.get_or_create(name=AUDITORS)
    reads = Permission.objects.filter(content_type__app_label__in=READ_APPS, codename__startswith="view_")
    group.permissions.add(*reads)
    return group


def roles_setup() -> None:
    reviewers_group()
    auditors_group()
