"""A stand-in for ReviewHub's agent API v1 (docs/api.md), in memory, for the client's own tests: what the
client sends and how it reads the answers, without Django. `POST /_decide/{id}` decides a call as a reviewer
would. The end-to-end tests use the real server."""

import json
import re
import secrets
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "rh_test"
SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}


class FakeHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.changed = threading.Condition()
        self.tools: dict[str, dict] = {}
        self.calls: dict[int, dict] = {}
        self.keys: dict[str, tuple[int, dict]] = {}
        self.claims = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def propose(self, body: dict) -> tuple[int, dict]:
        if body["tool"] not in self.tools:
            return 404, {"detail": "Unknown tool.", "errors": {"tool": ["No tool named so."]}}
        key = body.pop("idempotency_key")
        if key in self.keys:
            call_id, first = self.keys[key]
            return (200, self.calls[call_id]) if first == body else (409, {"detail": "Key reused.", "errors": {}})
        call_id = len(self.calls) + 1
        call = {"id": call_id, "thread_id": body["thread_id"], "tool": body["tool"], "arguments": body["arguments"]}
        call |= {"status": "pending", "decision": None, "result": None, "url": f"{self.url}/calls/{call_id}/"}
        self.calls[call_id], self.keys[key] = call, (call_id, body)
        return 201, call

    def decide(self, call_id: int, verdict: str, arguments: dict | None = None, reason: str = "") -> dict:
        with self.changed:
            call = self.calls[call_id]
            approved = verdict in ("approve", "edit")
            executed = arguments if arguments is not None else call["arguments"]
            changes = [
                {"field": k, "before": call["arguments"].get(k), "after": v}
                for k, v in executed.items()
                if call["arguments"].get(k) != v
            ]
            call["decision"] = {
                "verdict": verdict,
                "arguments": executed if approved else None,
                "changes": changes,
                "reason": reason,
                "guidance": reason if verdict == "respond" else "",
                "reviewer": "alice",
                "decided_at": datetime.now(UTC).isoformat(),
                "execution_key": "ek_" + secrets.token_hex(8) if approved else None,
            }
            call["status"] = "approved" if approved else "rejected"
            self.changed.notify_all()
            return call

    def claim(self, call_id: int, body: dict) -> tuple[int, dict]:
        with self.changed:
            call = self.calls[call_id]
            if not call["decision"] or body.get("execution_key") != call["decision"]["execution_key"]:
                return 409, {"detail": "Wrong execution key or call not approved.", "errors": {}}
            won = call["status"] == "approved"
            if won:
                call["status"], self.claims = "executing", self.claims + 1
            return 200, {"claimed": won, "call": call}

    def report(self, call_id: int, body: dict) -> tuple[int, dict]:
        with self.changed:
            call = self.calls[call_id]
            if not call["decision"] or body.get("execution_key") != call["decision"]["execution_key"]:
                return 409, {"detail": "Not approved.", "errors": {}}
            result = {"ok": body["ok"], "output": body["output"]}
            if call["result"] and {k: call["result"][k] for k in result} != result:
                return 409, {"detail": "Another result is recorded.", "errors": {}}
            call["result"] = call["result"] or result | {"reported_at": datetime.now(UTC).isoformat()}
            call["status"] = "executed" if body["ok"] else "failed"
            self.changed.notify_all()
            return 200, call


class Handler(BaseHTTPRequestHandler):
    server: FakeHub

    def log_message(self, format, *args):
        pass

    def answer(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

    def authorised(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {TOKEN}" or self.path.startswith("/_"):
            return True
        self.answer(401, {"detail": "Missing or bad token.", "errors": {}})
        return False

    def do_GET(self):
        if not self.authorised():
            return
        url = urlsplit(self.path)
        if url.path == "/api/v1/tools":
            return self.answer(200, list(self.server.tools.values()))
        match = re.fullmatch(r"/api/v1/calls/(\d+)", url.path)
        if not match or int(match[1]) not in self.server.calls:
            return self.answer(404, {"detail": "Not found.", "errors": {}})
        call = self.server.calls[int(match[1])]
        wait = float(parse_qs(url.query).get("wait", ["0"])[0])
        with self.server.changed:
            self.server.changed.wait_for(lambda: call["status"] != "pending", timeout=wait)
        self.answer(200, call)

    def do_PUT(self):
        if not self.authorised():
            return
        name = self.path.removeprefix("/api/v1/tools/")
        version = self.server.tools.get(name, {}).get("version", 0) + 1
        self.server.tools[name] = {"name": name, **self.body(), "version": version}
        self.answer(200, self.server.tools[name])

    def do_POST(self):
        if not self.authorised():
            return
        body, path = self.body(), urlsplit(self.path).path
        if path == "/api/v1/calls":
            with self.server.changed:
                return self.answer(*self.server.propose(body))
        if match := re.fullmatch(r"/_decide/(\d+)", path):
            return self.answer(200, self.server.decide(int(match[1]), **body))
        match = re.fullmatch(r"/api/v1/calls/(\d+)/(claim|result)", path)
        if not match or int(match[1]) not in self.server.calls:
            return self.answer(404, {"detail": "Not found.", "errors": {}})
        action = self.server.claim if match[2] == "claim" else self.server.report
        self.answer(*action(int(match[1]), body))


def serve() -> FakeHub:
    hub = FakeHub()
    threading.Thread(target=hub.serve_forever, daemon=True, name="fake-hub").start()
    return hub
