"""A small real support shop, so that facts are real lookups and approved
refunds and emails really change data."""

from decimal import Decimal

from django.db import models
from django.db.models import Sum
from django.utils import timezone

from approvals.lib.text import visible


class Customer(models.Model):
    name = models.CharField(max_length=200)
    email = models.EmailField(unique=True)
    customer_since = models.DateField()

    def __str__(self):
        return visible(self.name)  # customers write their names: hidden characters show


class Order(models.Model):
    class Status(models.TextChoices):
        PROCESSING = "processing"
        SHIPPED = "shipped"
        DELIVERED = "delivered"
        CANCELLED = "cancelled"

    number = models.CharField(max_length=20, unique=True)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="orders")
    total = models.DecimalField(max_digits=10, decimal_places=2)
    shipping = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0"))
    status = models.CharField(max_length=16, choices=Status.choices)
    items = models.TextField()
    placed_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.number

    def refunded_total(self) -> Decimal:
        return self.refunds.aggregate(s=Sum("amount"))["s"] or Decimal("0.00")


class Refund(models.Model):
    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="refunds")
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    reason = models.TextField()
    idempotency_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)


class OrderNote(models.Model):
    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="notes")
    text = models.TextField()
    idempotency_key = models.CharField(max_length=200, unique=True)
    removed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)


class OutgoingEmail(models.Model):
    to = models.EmailField()
    subject = models.CharField(max_length=300)
    body = models.TextField()
    idempotency_key = models.CharField(max_length=200, unique=True)
    sent_at = models.DateTimeField(auto_now_add=True)
