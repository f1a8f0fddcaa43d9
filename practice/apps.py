from django.apps import AppConfig


class PracticeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "practice"
    verbose_name = "Practice calls"

    def ready(self):
        from approvals.planted import planted

        from . import guard, services

        planted.register(
            is_practice_run=guard.is_practice_run,
            settle=services.practice_settle,
            hide=guard.without_practice,
            feedback=services.feedback_for,
            finish_run=services.practice_run_finish,
            runs_sql=guard.runs_sql,
        )
