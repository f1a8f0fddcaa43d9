"""The shop's tables take the shop's names (agents_order becomes shop_order, and so on), rows and keys kept."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial"), ("agents", "0003_shop_models_moved")]

    operations = [
        migrations.AlterModelTable(name=name, table=None)
        for name in ("customer", "order", "ordernote", "outgoingemail", "refund")
    ]
