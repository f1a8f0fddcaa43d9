"""The model client is made once per process and configuration, and keeps its HTTP connection between turns."""

from agents import llm


def test_the_client_is_made_once_and_reused(model):
    assert llm.client() is llm.client()


def test_another_model_address_gets_a_client_of_its_own(model, settings):
    first = llm.client()
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    assert llm.client() is not first


def test_model_turns_reuse_one_connection(model):
    model.script({"content": "one"}, {"content": "two"}, {"content": "three"})
    before = model.server.connections
    for _ in range(3):
        llm.complete([{"role": "user", "content": "hi"}], [])
    assert model.server.connections - before <= 1
