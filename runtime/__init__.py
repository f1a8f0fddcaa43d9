"""How work runs outside a request, the same for every app: a Celery task after the commit or, in the embedded
default, a thread of the web process (background.py); the one table of periodic work that Celery beat and the
embedded default both read (periodic.py); the embedded default's one process (embedded.py).

It imports nothing of the apps (the settings import periodic.py), so every app may use it and none is above it."""
