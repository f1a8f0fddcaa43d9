"""/metrics: Prometheus's format, for a scraper with the token or from an allowed network, with the
record's gauges read at scrape time and counters that add up across processes."""

import os
import subprocess
import sys

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from ops import metrics
from tests.reviewing import REFUND_CALL, decide, propose

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-0123456789"


def samples(response) -> dict:
    return parsed(response.content.decode())


def parsed(text: str) -> dict:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def scraper(client, settings):
    settings.METRICS_TOKEN = TOKEN

    def scrape():
        response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain")
        return samples(response)

    return scrape


def test_metrics_are_refused_without_the_token(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 403


def test_metrics_are_refused_when_nothing_is_configured(client):
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 403


def test_an_allowed_network_may_scrape_without_the_token(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8", "127.0.0.0/8"]
    assert client.get("/metrics").status_code == 200
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics").status_code == 403


def test_pending_calls_are_counted_by_tool_and_group_with_the_oldest_age(scraper, run, reviewer):
    propose(run, *REFUND_CALL)
    shown = scraper()
    assert shown[("reviewhub_pending_calls", (("group", ""), ("tool", "issue_refund")))] == 1
    assert shown[("reviewhub_oldest_pending_call_age_seconds", (("tool", "issue_refund"),))] >= 0
    assert shown[("reviewhub_runs", (("status", "queued"),))] == 1
    assert shown[("reviewhub_stuck_runs", ())] == 0


def test_a_decision_is_counted_by_verdict_with_its_time_to_decision(
    scraper, run, reviewer, django_capture_on_commit_callbacks
):
    labels = {"tool": "issue_refund", "verdict": "approve"}
    before = REGISTRY.get_sample_value("reviewhub_decisions_total", labels) or 0
    timed = REGISTRY.get_sample_value("reviewhub_time_to_decision_seconds_count", {"tool": "issue_refund"}) or 0
    with django_capture_on_commit_callbacks(execute=True):
        call = propose(run, *REFUND_CALL)
    with django_capture_on_commit_callbacks(execute=True):
        decide(call, reviewer)
    shown = scraper()
    assert shown[("reviewhub_decisions_total", tuple(sorted(labels.items())))] == before + 1
    assert shown[("reviewhub_time_to_decision_seconds_count", (("tool", "issue_refund"),))] == timed + 1


def test_counters_of_several_processes_add_up_in_multiprocess_mode(tmp_path, monkeypatch):
    code = (
        "import django, os; django.setup(); from ops import metrics; "
        "metrics.EXECUTIONS.labels('issue_refund', 'executed').inc(); metrics.webhook_delivered(ok=False)"
    )
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    body, _ = metrics.exposition()
    shown = parsed(body.decode())
    assert shown[("reviewhub_executions_total", (("outcome", "executed"), ("tool", "issue_refund")))] == 2
    assert shown[("reviewhub_webhook_deliveries_total", (("outcome", "failed"),))] == 2
    assert shown[("reviewhub_runs", (("status", "completed"),))] == 0  # the record's gauges come along
