"""Audit events point at their run and call without foreign-key constraints in the database; a trigger keeps
the one thing the constraints did beyond what the code does: refusing to delete a run or a call that an event
names.

Each constraint was checked at commit by locking the run's and the call's row (SELECT ... FOR KEY SHARE), for
every event: a write to that row, a wait for anyone holding it FOR UPDATE, about 40 us of PostgreSQL's CPU per
event (bench/README.md, issue 26). The ids an event carries are those of rows its own transaction created or
read, and nothing deletes runs or calls: the ORM's PROTECT refuses it, the admin deletes neither, and there is
no retention or purge. The trigger below costs nothing when events are appended, only when a run or a call is
deleted (an index lookup). SQLite, the embedded demo, gets no trigger, as for migration 0003.
"""

import django.db.models.deletion
from django.db import migrations, models

INSTALL = """
CREATE OR REPLACE FUNCTION reviewhub_refuse_run_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM approvals_auditevent WHERE run_id = OLD.id) THEN
        RAISE EXCEPTION 'run % is in the audit trail: it cannot be deleted', OLD.id;
    END IF;
    RETURN OLD;
END;
$$;
CREATE OR REPLACE FUNCTION reviewhub_refuse_call_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM approvals_auditevent WHERE tool_call_id = OLD.id) THEN
        RAISE EXCEPTION 'tool call % is in the audit trail: it cannot be deleted', OLD.id;
    END IF;
    RETURN OLD;
END;
$$;
CREATE TRIGGER approvals_run_kept_for_the_trail
    BEFORE DELETE ON approvals_run
    FOR EACH ROW EXECUTE FUNCTION reviewhub_refuse_run_delete();
CREATE TRIGGER approvals_toolcall_kept_for_the_trail
    BEFORE DELETE ON approvals_toolcall
    FOR EACH ROW EXECUTE FUNCTION reviewhub_refuse_call_delete();
"""

UNINSTALL = """
DROP TRIGGER IF EXISTS approvals_toolcall_kept_for_the_trail ON approvals_toolcall;
DROP TRIGGER IF EXISTS approvals_run_kept_for_the_trail ON approvals_run;
DROP FUNCTION IF EXISTS reviewhub_refuse_call_delete();
DROP FUNCTION IF EXISTS reviewhub_refuse_run_delete();
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
    dependencies = [
        ("approvals", "0018_high_impact_gate"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="audit_events",
                to="approvals.run",
            ),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="tool_call",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="audit_events",
                to="approvals.toolcall",
            ),
        ),
        migrations.RunPython(install, uninstall, elidable=False),
    ]
