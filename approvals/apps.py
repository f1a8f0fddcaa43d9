from django.apps import AppConfig
from django.db.backends.signals import connection_created


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = "Approvals"

    def ready(self):
        from . import percentile

        # SQLite has no percentile_cont; the insight page brings its own.
        connection_created.connect(percentile.add_sqlite_functions, dispatch_uid="reviewhub-sqlite-functions")
