"""On PostgreSQL, indexes for the admin's search and the insight page.

- search.calls() asks `arguments @> {"order_id": ...}` and `facts @> {...}`;
  jsonb_path_ops GIN indexes answer that without reading every call.
- The insight page joins a window of decisions to their calls for the time
  and tool of each proposal; a covering index (id, with created_at, tool_name and review_round)
  lets PostgreSQL do that from the index alone instead of the wide call rows.

SQLite (the embedded demo, a few hundred calls) needs none of them.
"""

from django.db import migrations

INSTALL = """
CREATE INDEX IF NOT EXISTS approvals_toolcall_arguments_gin ON approvals_toolcall USING gin (arguments jsonb_path_ops);
CREATE INDEX IF NOT EXISTS approvals_toolcall_facts_gin ON approvals_toolcall USING gin (facts jsonb_path_ops);
CREATE INDEX IF NOT EXISTS approvals_toolcall_id_time_tool ON approvals_toolcall (id) INCLUDE (created_at, tool_name, review_round);
"""
UNINSTALL = """
DROP INDEX IF EXISTS approvals_toolcall_id_time_tool;
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
