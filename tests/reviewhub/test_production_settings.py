"""Production settings: with DEBUG off ReviewHub is HTTPS-only and needs a real key, except the embedded
demo (and plain-HTTP trials that say so). Each case loads the real settings in a fresh process."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "a-production-key-that-is-long-and-random-0123456789-abcdefghij",
    "ALLOWED_HOSTS": "reviewhub.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://reviewhub.example.com",
    "DATABASE_URL": "postgres://reviewhub@db.example.com:5432/reviewhub",
    "REDIS_URL": "redis://redis.example.com:6379/0",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "EMAIL_HOST": "smtp.example.com",
}
SHOWN = [
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_SSL_REDIRECT",
    "SECURE_PROXY_SSL_HEADER",
    "SECRET_KEY",
]


def clean_env(tmp_path: Path, **values: str) -> dict:
    """The machine's environment without anything ReviewHub reads, plus the given values."""
    env = {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    return {**env, "DJANGO_SETTINGS_MODULE": "reviewhub.settings", "REVIEWHUB_VAR_DIR": str(tmp_path), **values}


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def loaded_settings(env: dict) -> dict:
    code = "import json; from django.conf import settings as s; print(json.dumps({n: getattr(s, n) for n in %r}))"
    result = manage(env, "shell", "-c", code % SHOWN)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_check_deploy_passes_with_the_documented_production_variables(tmp_path):
    result = manage(clean_env(tmp_path, **PRODUCTION), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_debug_off_means_secure_cookies_and_hsts_by_default(tmp_path):
    env = clean_env(tmp_path, DEBUG="0", SECRET_KEY=PRODUCTION["SECRET_KEY"])
    shown = loaded_settings(env)
    assert shown["SESSION_COOKIE_SECURE"] is True
    assert shown["CSRF_COOKIE_SECURE"] is True
    assert shown["SECURE_HSTS_SECONDS"] >= 31536000
    assert shown["SECURE_SSL_REDIRECT"] is False
    assert shown["SECURE_PROXY_SSL_HEADER"] is None


def test_the_ssl_redirect_and_the_proxy_header_come_from_the_environment(tmp_path):
    shown = loaded_settings(clean_env(tmp_path, **PRODUCTION))
    assert shown["SECURE_SSL_REDIRECT"] is True
    assert shown["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_a_plain_http_trial_says_so(tmp_path):
    env = clean_env(tmp_path, DEBUG="0", SECRET_KEY=PRODUCTION["SECRET_KEY"], REVIEWHUB_INSECURE_HTTP="1")
    shown = loaded_settings(env)
    assert shown["SESSION_COOKIE_SECURE"] is False
    assert shown["CSRF_COOKIE_SECURE"] is False
    assert shown["SECURE_HSTS_SECONDS"] == 0


def test_it_refuses_to_start_without_a_secret_key(tmp_path):
    result = manage(clean_env(tmp_path, DEBUG="0"), "check")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_the_embedded_demo_keeps_a_random_key_of_its_own_and_plain_http(tmp_path):
    env = clean_env(tmp_path, REVIEWHUB_DEMO="1")
    first, second = loaded_settings(env), loaded_settings(env)
    assert len(first["SECRET_KEY"]) >= 50
    assert first["SECRET_KEY"] == second["SECRET_KEY"] == (tmp_path / "secret_key").read_text()
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0
    assert first["SESSION_COOKIE_SECURE"] is False
    assert first["SECURE_HSTS_SECONDS"] == 0


def test_manage_py_demo_marks_itself_as_the_demo_before_the_settings_load(tmp_path):
    result = manage(clean_env(tmp_path), "demo", "--help")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "secret_key").exists()


def test_the_default_mailer_is_smtp_in_production_and_files_in_the_demo(tmp_path):
    code = "from django.conf import settings; print(settings.MAILERS['default']['BACKEND'])"
    production = manage(clean_env(tmp_path, SECRET_KEY=PRODUCTION["SECRET_KEY"]), "shell", "-c", code)
    demo = manage(clean_env(tmp_path, REVIEWHUB_DEMO="1"), "shell", "-c", code)
    assert production.stdout.splitlines()[-1].endswith("smtp.EmailBackend"), production.stderr
    assert demo.stdout.splitlines()[-1].endswith("filebased.EmailBackend"), demo.stderr


def test_new_run_acts_for_the_demos_agent_account_only_in_the_demo(tmp_path):
    code = "from django.conf import settings; print(repr(settings.REVIEWHUB_DEMO_RUNS_AS))"
    production = clean_env(tmp_path, SECRET_KEY=PRODUCTION["SECRET_KEY"], REVIEWHUB_DEMO_RUNS_AS="ops-agent")
    demo = clean_env(tmp_path, REVIEWHUB_DEMO="1")
    assert manage(production, "shell", "-c", code).stdout.splitlines()[-1] == "''"
    assert manage(demo, "shell", "-c", code).stdout.splitlines()[-1] == "'ops-agent'"


def test_the_content_security_policy_also_closes_base_form_action_objects_and_framing(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/")
    policy = response["Content-Security-Policy"]
    for directive in ("base-uri 'none'", "form-action 'self'", "object-src 'none'", "frame-ancestors 'none'"):
        assert directive in policy
    html = response.content.decode()
    assert '"allowEval": false, "allowScriptTags": false' in html  # htmx never evaluates what a page holds
