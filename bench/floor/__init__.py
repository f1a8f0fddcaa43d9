"""The floor under the agent API: the same project and ASGI stack, with proposing and reading a call served by bare
Django views (views.py; bench/agents_fleet.py --floor)."""
