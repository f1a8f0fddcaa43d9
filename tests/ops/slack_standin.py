"""A local stand-in for Slack's Web API: records each method called and answers as Slack would,
so the Slack tests need no internet (slack-sdk's WebClient takes the base URL); the Slack tests' fixtures
(through tests/conftest.py) and their signed button presses."""

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode

import pytest
from slack_sdk.signature import SignatureVerifier

from approvals.models import ToolCall
from approvals.tools import registry
from ops.models import SlackChannel, SlackIdentity
from tests.reviewing import REFUND_CALL, propose


class SlackStandIn:
    def __init__(self):
        self.calls: list[tuple[str, dict]] = []  # (method, arguments)
        self.errors: dict[str, str] = {}  # method -> error to answer with
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    arguments = json.loads(raw or "{}")
                else:
                    arguments = {key: values[0] for key, values in parse_qs(raw).items()}
                method = self.path.rsplit("/", 1)[-1]
                standin.calls.append((method, arguments))
                error = standin.errors.get(method)
                ts = f"1700000000.{len(standin.calls):06d}"
                answer = {"ok": False, "error": error} if error else {"ok": True, "ts": ts}
                body = json.dumps(answer | {"channel": arguments.get("channel", "")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]

    def last(self, method: str) -> dict:
        return [arguments for name, arguments in self.calls if name == method][-1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


SECRET = "slack-signing-secret-for-tests"
URL = "/slack/interactions"


@pytest.fixture
def slack(settings, background_inline):
    standin = SlackStandIn()
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET, settings.SLACK_API_URL = "xoxb-test", SECRET, standin.url
    settings.REVIEWHUB_SITE_URL = "https://reviewhub.example.com"
    SlackChannel.objects.create(group=None, channel_id="C-REVIEW")
    yield standin
    standin.close()


@pytest.fixture
def chat_refunds():
    """Refunds may be decided from chat (the demo's refund tool does not allow it)."""
    tool = registry.get("issue_refund")
    registry.register(dataclasses.replace(tool, chat_decisions=True))
    yield
    registry.register(tool)


@pytest.fixture
def alice_in_slack(reviewer):
    SlackIdentity.objects.create(user=reviewer, slack_user_id="U-ALICE")
    return reviewer


def proposed(run, django_capture_on_commit_callbacks) -> ToolCall:
    with django_capture_on_commit_callbacks(execute=True):
        return propose(run, *REFUND_CALL)


def signed(body: str, secret: str = SECRET, timestamp: int | None = None) -> dict:
    timestamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}


def press_body(call: ToolCall, action: str = "approve", user: str = "U-ALICE", shown_hash: str | None = None) -> str:
    value = json.dumps({"call": call.pk, "hash": shown_hash or call.review_hash})
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "channel": {"id": "C-REVIEW"},
        "actions": [{"action_id": action, "value": value}],
    }
    return urlencode({"payload": json.dumps(payload)})


def press(client, capture, body: str, headers: dict | None = None):
    with capture(execute=True):
        return client.post(URL, body, content_type="application/x-www-form-urlencoded", headers=headers or signed(body))
