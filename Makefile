# ReviewHub: `make run` starts the demo (`make run PORT=8001` on another port), `make test` runs every test.
PYTHON ?= python3.12
VENV := .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: requirements.txt requirements-dev.txt client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt 2>&1 | grep -v "^WARNING: Location" || true
	$(PY) -c "import django, channels, celery, openai, playwright, reviewhub_client"
	touch $@

install: $(VENV)/.installed

# A headless Chromium for the browser tests (Debian's package; Playwright cannot download one here).
chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null)

# The demo's web port: make run PORT=8001 when 8000 is taken.
PORT ?= 8000

run: install
	$(PY) manage.py demo --port $(PORT)

# mypy's Django plugin loads the settings, which need a SECRET_KEY outside DEBUG: a throwaway one, for mypy only.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	SECRET_KEY=mypy-type-check-only $(VENV)/bin/mypy

test: install chromium lint
	$(PY) -m pytest tests -m "not browser"
	DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest tests -m browser

.PHONY: install chromium lint run test

# The side-by-side benchmark's peers (LangGraph, the OpenAI Agents SDK), pinned in bench/requirements.txt,
# in a virtualenv of their own: they need not resolve with the project's pins.
.venv-bench/.installed: bench/requirements.txt
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	touch $@

bench-venv: .venv-bench/.installed

bench: install bench-venv
	$(PY) bench/sidebyside.py

.PHONY: bench bench-venv
