"""schemathesis against /api/v1/openapi.json: generated requests (valid and not) to every operation get no
server error and an answer that matches the document. A sample runs here; SCHEMATHESIS_EXAMPLES=N for more."""

import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.config import SchemathesisConfig

from tests.agentapi import AgentClient

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "40"))

# Invalid requests must be refused with a 4xx; 413 (a body over the limit, docs/api.md) is one of them.
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": REFUSALS}}})
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", WSGIHandler(), config=CONFIG)


@pytest.fixture
def agent_token(db):
    """An agent with a declared tool and a call, so some generated requests find something.

    The requests then go through the WSGI handler in the test's transaction: it must not close the
    connection after each (Django's test client, used here first, keeps it open the same way)."""
    agent = AgentClient("fuzzed")
    agent.declare()
    agent.propose()
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield agent.token
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_generated_request_gets_a_documented_answer(case, agent_token):
    # Not positive_data_acceptance: what the document cannot say is checked too (the arguments against the
    # tool's own declared schema, an input schema that is a JSON Schema of an object, tools and calls that
    # exist), and refused with a 4xx naming the field, as the contract says.
    case.call_and_validate(
        headers={"Authorization": f"Bearer {agent_token}"}, excluded_checks=[checks.positive_data_acceptance]
    )
