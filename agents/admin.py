from django.contrib import admin

from .models import Customer, Order, OrderNote, OutgoingEmail, Refund

admin.site.register(Customer, list_display=["name", "email", "customer_since"], search_fields=["name", "email"])
admin.site.register(Order, list_display=["number", "customer", "total", "status"], search_fields=["number"])
admin.site.register(Refund, list_display=["order", "amount", "created_at", "idempotency_key"])
admin.site.register(OrderNote, list_display=["order", "text", "removed"])
admin.site.register(OutgoingEmail, list_display=["to", "subject", "sent_at"])
