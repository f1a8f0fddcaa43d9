import time

from django.core.management.base import BaseCommand, CommandError

from approvals import audit


class Command(BaseCommand):
    help = (
        "Walk the audit trail from its first event, check every hash and link, the heads and the anchored heads, "
        "and name the first event (or run) that does not match. Exits with status 1 if the chain is broken."
    )

    def add_arguments(self, parser):
        parser.add_argument("--chunk-size", type=int, default=audit.CHUNK_SIZE, help="Events read per query.")
        parser.add_argument(
            "--anchor",
            default="",
            help="A head hash written down earlier (outside ReviewHub); the trail must still contain it.",
        )

    def handle(self, *args, chunk_size, anchor, **options):
        started = time.monotonic()
        check = audit.verify(chunk_size=chunk_size, anchor=anchor.strip())
        seconds = time.monotonic() - started
        if not check.ok:
            where = f" (event {check.broken_at})" if check.broken_at is not None else ""
            raise CommandError(f"Audit trail BROKEN{where} after {check.count:,} good events: {check.problem}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Audit trail intact: {check.count:,} events verified in {seconds:.1f} s,"
                f" with {check.anchored:,} anchored heads."
            )
            + f"\nHead hash (write it down to anchor this state): {check.head}"
            + f"\nGlobal chain head (it vouches for every anchored run before it): {audit.head_hash()}"
        )
