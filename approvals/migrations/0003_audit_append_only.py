"""On PostgreSQL, refuse UPDATE and DELETE on the audit trail, and DELETE of its head.

The application only ever inserts audit events (approvals.audit.record); the
trigger makes that a property of the database, whatever code or person connects.
A table owner can still disable or drop the trigger: that is what the hash chain
and `manage.py verify_audit` are for. TRUNCATE is not blocked because test
databases are flushed with it; verify_audit catches an emptied trail through the
head row.

SQLite (the embedded demo) gets no trigger: its flush between tests is a DELETE.
"""

from django.db import migrations

INSTALL = """
CREATE OR REPLACE FUNCTION reviewhub_refuse_audit_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: % on % is refused', TG_OP, TG_TABLE_NAME
        USING HINT = 'Audit events are never changed or deleted; record a new event instead.';
END;
$$;
CREATE TRIGGER approvals_auditevent_append_only
    BEFORE UPDATE OR DELETE ON approvals_auditevent
    FOR EACH ROW EXECUTE FUNCTION reviewhub_refuse_audit_change();
CREATE TRIGGER approvals_audithead_keep
    BEFORE DELETE ON approvals_audithead
    FOR EACH ROW EXECUTE FUNCTION reviewhub_refuse_audit_change();
"""

UNINSTALL = """
DROP TRIGGER IF EXISTS approvals_audithead_keep ON approvals_audithead;
DROP TRIGGER IF EXISTS approvals_auditevent_append_only ON approvals_auditevent;
DROP FUNCTION IF EXISTS reviewhub_refuse_audit_change();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(INSTALL)  # no parameters: the % signs are PL/pgSQL's


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(UNINSTALL)


class Migration(migrations.Migration):
    dependencies = [("approvals", "0002_governance")]

    operations = [migrations.RunPython(install, uninstall, elidable=False)]
