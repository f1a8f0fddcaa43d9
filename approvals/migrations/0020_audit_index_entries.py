"""Two index entries fewer per audit event: each one is PostgreSQL CPU and WAL on every step, decision and execution.

Every event wrote six: its primary key, (chain, id), run_id, tool_call_id, kind and created_at. Now four
(bench/README.md, "Audit events: index entries per event"):

- run_id: a run's events are its chain (chain = the run's id), which (chain, id) already orders; only the events
  recorded before chains were per run, which stayed in the global chain naming their run, keep an entry
  (approvals.audit.of_run). run_id's entries went where each run's events are, a page per active run, as
  (chain, id)'s do: after each checkpoint a full page of WAL for each.
- kind: partial, for the rare kinds only (the admin's filter on an anchor or a flag, the flags' lookups); the
  routine kinds are found through created_at's index or the run's or the call's.

The trigger that refuses deleting a run that an event names (0019) now looks for the run's events the same way.
The new indexes are built before the old ones are dropped. On a large trail each CREATE INDEX holds writes to the
table while it builds: build them beforehand with CREATE INDEX CONCURRENTLY under the same names if that matters.
"""

import django.db.models.deletion
from django.db import migrations, models

REFUSE_RUN_DELETE = """
CREATE OR REPLACE FUNCTION reviewhub_refuse_run_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM approvals_auditevent WHERE chain = OLD.id)
       OR EXISTS (SELECT FROM approvals_auditevent WHERE chain = 0 AND run_id = OLD.id) THEN
        RAISE EXCEPTION 'run % is in the audit trail: it cannot be deleted', OLD.id;
    END IF;
    RETURN OLD;
END;
$$;
"""

REFUSE_RUN_DELETE_BEFORE = """
CREATE OR REPLACE FUNCTION reviewhub_refuse_run_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM approvals_auditevent WHERE run_id = OLD.id) THEN
        RAISE EXCEPTION 'run % is in the audit trail: it cannot be deleted', OLD.id;
    END IF;
    RETURN OLD;
END;
$$;
"""


def _replace(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":  # SQLite has no trigger (0019)
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(sql)  # no parameters: the % signs are PL/pgSQL's

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0019_audit_events_without_fk_locks"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(("chain", 0), ("run__isnull", False)), fields=["run"], name="auditevent_global_run"
            ),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(
                    (
                        "kind__in",
                        (
                            "run_started",
                            "proposed",
                            "auto_run",
                            "decided",
                            "review_claimed",
                            "review_released",
                            "executing",
                            "executed",
                            "resumed",
                            "completed",
                        ),
                    ),
                    _negated=True,
                ),
                fields=["kind", "created_at"],
                name="auditevent_rare_kind",
            ),
        ),
        migrations.RunPython(_replace(REFUSE_RUN_DELETE), _replace(REFUSE_RUN_DELETE_BEFORE)),
        migrations.RemoveIndex(
            model_name="auditevent",
            name="auditevent_kind",
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="audit_events",
                to="approvals.run",
            ),
        ),
    ]
