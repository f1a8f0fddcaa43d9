from django.db import migrations


def add_rule(apps, schema_editor):
    PolicyRule = apps.get_model("approvals", "PolicyRule")
    PolicyRule.objects.get_or_create(
        name="Small refunds run without review",
        defaults={
            "tool_name": "issue_refund",
            "field": "amount",
            "operator": "<=",
            "value": 20,
            "outcome": "run",
            "order": 10,
        },
    )


def remove_rule(apps, schema_editor):
    apps.get_model("approvals", "PolicyRule").objects.filter(name="Small refunds run without review").delete()


class Migration(migrations.Migration):
    dependencies = [("agents", "0001_initial"), ("approvals", "0001_initial")]
    operations = [migrations.RunPython(add_rule, remove_rule)]
