"""The groups ReviewHub's roles are: reviewers decide calls, auditors read the whole record and change nothing.

Other groups (a team, "senior") narrow which calls a reviewer may decide; they carry no permission of their own."""

from django.contrib.auth.models import Group, Permission

from .access import AUDITORS, PRACTICE_PERMISSION, REVIEW_PERMISSION

REVIEWERS = "reviewers"
READ_APPS = ["approvals", "shop", "remote", "gateway", "agui", "practice"]


def reviewers_group() -> Group:
    group, _ = Group.objects.get_or_create(name=REVIEWERS)
    app_label, codename = REVIEW_PERMISSION.split(".")
    group.permissions.add(Permission.objects.get(codename=codename, content_type__app_label=app_label))
    return group


def auditors_group() -> Group:
    group, _ = Group.objects.get_or_create(name=AUDITORS)
    reads = Permission.objects.filter(content_type__app_label__in=READ_APPS, codename__startswith="view_")
    group.permissions.add(*reads)
    app_label, codename = PRACTICE_PERMISSION.split(".")  # which waiting calls are practice ones (practice/)
    group.permissions.add(*Permission.objects.filter(codename=codename, content_type__app_label=app_label))
    return group


def roles_setup() -> None:
    reviewers_group()
    auditors_group()
