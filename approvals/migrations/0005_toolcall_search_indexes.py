"""On PostgreSQL, GIN indexes for the admin's search by order number or email.

search.calls() asks `arguments @> {"order_id": ...}` and `facts @> {...}`;
jsonb_path_ops indexes answer that without reading every call. SQLite (the
embedded demo, a few hundred calls) needs none.
"""

from django.db import migrations

INSTALL = """
CREATE INDEX IF NOT EXISTS approvals_toolcall_arguments_gin ON approvals_toolcall USING gin (arguments jsonb_path_ops);
CREATE INDEX IF NOT EXISTS approvals_toolcall_facts_gin ON approvals_toolcall USING gin (facts jsonb_path_ops);
"""
UNINSTALL = """
DROP INDEX IF EXISTS approvals_toolcall_facts_gin;
DROP INDEX IF EXISTS approvals_toolcall_arguments_gin;
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNINSTALL)


class Migration(migrations.Migration):
    dependencies = [("approvals", "0004_audit_kinds_and_indexes")]

    operations = [migrations.RunPython(install, uninstall, elidable=False)]
