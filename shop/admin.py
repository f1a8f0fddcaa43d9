from django.contrib import admin

from approvals.admin.base import revealed

from .models import Customer, Order, OrderNote, OutgoingEmail, Refund

# Customers wrote their names, the model wrote notes and emails: hidden characters are shown as such.


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ["name_shown", "email_shown", "customer_since"]
    search_fields = ["name", "email"]
    name_shown = revealed("name", "name")
    email_shown = revealed("email", "email")


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["number", "customer_shown", "total", "status"]
    search_fields = ["number"]
    customer_shown = revealed("customer", "customer")


admin.site.register(Refund, list_display=["order", "amount", "created_at", "idempotency_key"])


@admin.register(OrderNote)
class OrderNoteAdmin(admin.ModelAdmin):
    list_display = ["order", "text_shown", "removed"]
    text_shown = revealed("text", "text")


@admin.register(OutgoingEmail)
class OutgoingEmailAdmin(admin.ModelAdmin):
    list_display = ["to_shown", "subject_shown", "sent_at"]
    to_shown = revealed("to", "to")
    subject_shown = revealed("subject", "subject")
