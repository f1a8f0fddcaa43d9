"""Show that verify_audit finds one changed, deleted or reordered event among a million.

    DATABASE_URL=postgres://USER@HOST:5432/DBNAME python bench/tamper.py

Each tampering happens inside a transaction that is rolled back afterwards
(the append-only trigger is disabled only inside it), so the database is left
as it was. Needs the table owner or a superuser, as any real tampering would.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewhub.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(32).hex())  # a local tool: any key will do

import django

django.setup()

from django.db import connection, transaction  # noqa: E402

from approvals import audit  # noqa: E402
from approvals.models import AuditEvent  # noqa: E402


class Rollback(Exception):
    pass


def tampered(name: str, statements: list[str]) -> None:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("ALTER TABLE approvals_auditevent DISABLE TRIGGER approvals_auditevent_append_only")
            for sql in statements:
                cursor.execute(sql)
            started = time.perf_counter()
            check = audit.verify()
            seconds = time.perf_counter() - started
            print(f"{name:<34} found at event {check.broken_at} in {seconds:.1f} s: {check.problem}")
            raise Rollback
    except Rollback:
        pass


def main():
    ids = list(AuditEvent.objects.order_by("pk").values_list("pk", flat=True)[:1])
    last = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()
    middle = ids[0] + (last - ids[0]) * 2 // 3
    print(f"{AuditEvent.objects.count():,} events; tampering around event {middle}\n")
    tampered(
        "an edited payload",
        [f"UPDATE approvals_auditevent SET payload = payload || '{{\"amount\": 1}}' WHERE id = {middle}"],
    )
    tampered("a deleted event", [f"DELETE FROM approvals_auditevent WHERE id = {middle}"])
    tampered(
        "two swapped events",
        [
            f"UPDATE approvals_auditevent SET id = -1 WHERE id = {middle}",
            f"UPDATE approvals_auditevent SET id = {middle} WHERE id = {middle + 1}",
            f"UPDATE approvals_auditevent SET id = {middle + 1} WHERE id = -1",
        ],
    )
    tampered("the last event deleted", [f"DELETE FROM approvals_auditevent WHERE id = {last}"])


if __name__ == "__main__":
    main()
