from django.core.management.base import BaseCommand, CommandError

from approvals.audit import export


class Command(BaseCommand):
    help = "Write the audit trail as JSON lines or CSV, streamed, optionally limited to a date range and a tool."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=sorted(export.FORMATS), default="jsonl")
        parser.add_argument("--since", help="First date (YYYY-MM-DD) or date and time to include.")
        parser.add_argument("--before", help="First date (YYYY-MM-DD) or date and time NOT to include.")
        parser.add_argument("--tool", default="", help="Only events of calls to this tool.")
        parser.add_argument("--output", "-o", default="-", help="File to write; '-' (the default) is standard output.")

    def handle(self, *args, format, since, before, tool, output, **options):
        try:
            selection = export.ExportFilter.parse(since=since, before=before, tool=tool)
        except ValueError as exc:
            raise CommandError(str(exc))
        lines = export.lines(selection, format)
        if output == "-":
            for line in lines:
                self.stdout.write(line, ending="")
            return
        with open(output, "w", encoding="utf-8", newline="") as file:
            file.writelines(lines)
