"""Auditors change nothing in any admin, whatever else they hold (even superuser): every ModelAdmin registered on
the admin site, the shop's and Django's own user admin included, asks approvals/access/ (may_change_in_admin)."""

from decimal import Decimal

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client, RequestFactory
from django.urls import reverse

from approvals.admin.auditors import AuditorsOnlyLook
from shop.models import Order, Refund

REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)
IDS = [model._meta.label for model, _ in REGISTERED]


@pytest.fixture
def superuser_auditor(shop, django_user_model):
    user = django_user_model.objects.create_superuser("audrey")
    user.groups.add(Group.objects.get_or_create(name="auditors")[0])
    return user


@pytest.fixture
def auditor_superuser_client(superuser_auditor):
    client = Client()
    client.force_login(superuser_auditor)
    return client


def _request(user):
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=IDS)
def test_every_registered_model_admin_refuses_a_superuser_auditor_to_add_change_delete_or_act(
    model, model_admin, superuser_auditor, django_user_model
):
    request = _request(superuser_auditor)

    assert isinstance(model_admin, AuditorsOnlyLook)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request) and not model_admin.has_delete_permission(request)
    assert model_admin.get_actions(request) == {}
    assert model_admin.has_view_permission(request)


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=IDS)
def test_every_registered_model_admins_add_page_refuses_a_superuser_auditors_post(
    model, model_admin, auditor_superuser_client
):
    before = model.objects.count()
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")

    response = auditor_superuser_client.post(url, {})

    assert response.status_code == 403
    assert model.objects.count() == before


def test_a_superuser_auditor_cannot_change_an_order(auditor_superuser_client):
    order = Order.objects.first()
    url = reverse("admin:shop_order_change", args=[order.pk])

    response = auditor_superuser_client.post(
        url, {"number": order.number, "customer": order.customer_id, "total": "99999"}
    )

    assert response.status_code == 403
    assert Order.objects.get(pk=order.pk).total == order.total


def test_a_superuser_auditor_cannot_create_a_refund_or_a_user(auditor_superuser_client, django_user_model):
    order = Order.objects.first()
    refund = {"order": order.pk, "amount": Decimal("5.00"), "reason": "x", "idempotency_key": "auditor"}
    user = {"username": "mallory", "password1": "a-Long-pass-123", "password2": "a-Long-pass-123"}

    assert auditor_superuser_client.post(reverse("admin:shop_refund_add"), refund).status_code == 403
    assert auditor_superuser_client.post(reverse("admin:auth_user_add"), user).status_code == 403
    assert not Refund.objects.filter(idempotency_key="auditor").exists()
    assert not django_user_model.objects.filter(username="mallory").exists()


def test_a_superuser_auditor_cannot_make_a_reviewer_superuser_or_set_their_password(
    auditor_superuser_client, reviewer, django_user_model
):
    change = reverse("admin:auth_user_change", args=[reviewer.pk])
    password = reverse("admin:auth_user_password_change", args=[reviewer.pk])

    made_superuser = auditor_superuser_client.post(change, {"username": reviewer.username, "is_superuser": "on"})
    new_password = auditor_superuser_client.post(
        password, {"password1": "a-Long-pass-123", "password2": "a-Long-pass-123"}
    )

    reviewer.refresh_from_db()
    assert made_superuser.status_code == new_password.status_code == 403
    assert not reviewer.is_superuser and not reviewer.check_password("a-Long-pass-123")


def test_a_superuser_who_is_no_auditor_still_changes_orders_and_users_and_revokes_tokens(shop, django_user_model):
    from remote.models import AgentToken

    request = _request(django_user_model.objects.create_superuser("root"))

    assert admin.site._registry[Order].has_change_permission(request)
    assert admin.site._registry[django_user_model].has_add_permission(request)
    assert "revoke" in admin.site._registry[AgentToken].get_actions(request)
