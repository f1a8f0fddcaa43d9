"""A scripted, deterministic OpenAI-compatible model server.

It plays a support agent on the demo shop, so the demo and the tests go
through the real openai client over real HTTP. Tests can also queue exact
replies:  POST /_script  {"replies": [{"content": "...", "tool_calls": [{"name": "...", "arguments": {...}}]},
                                        {"error": 500}, {"malformed": true}]}
GET /_requests returns the chat requests received so far; POST /_reset clears both.

Run it:  python -m agents.model_server --port 8765
"""

import argparse
import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORDER = re.compile(r"\bA-\d{4}\b")
AMOUNT = re.compile(r"\$(\d+(?:\.\d{1,2})?)")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")

# The demo shop's customers, by first name, as the scripted agent "remembers" them, with an order of theirs.
KNOWN = {
    "dana": ("Dana Smith", "dana.smith@gmail.co", "A-1001"),  # not Dana's real address: a reviewer should catch it
    "lee": ("Lee Wong", "lee.wong@example.com", "A-1002"),
    "maria": ("Maria Garcia", "maria.garcia@example.com", "A-1003"),
}


def _call(name: str, arguments: dict) -> dict:
    return {"name": name, "arguments": arguments}


def plan(instruction: str, default_order: str = "A-1001") -> tuple[str, list[dict]]:
    """What the agent says and which tools it calls for a user instruction.

    An instruction that names no order (a reviewer's guidance, say) is about the
    order of the conversation so far, default_order.
    """
    text = instruction.lower()
    orders = ORDER.findall(instruction)
    order = orders[0] if orders else default_order
    if "delete" in text and "customer" in text:
        return "The customer wants their account removed; I'll delete the customer record.", [
            _call("delete_customer", {"customer_id": 1})
        ]
    if "cancel" in text:
        return f"I'll cancel order {order} for the customer.", [_call("cancel_order", {"order_id": order})]
    if "email" in text:
        return _plan_email(instruction, orders)
    if "refund" in text:
        return _plan_refund(instruction, order)
    if orders:
        return f"Let me look up order {order}.", [_call("get_order_status", {"order_id": order})]
    query = EMAIL.findall(instruction) or [w for w in instruction.split() if w.istitle()][-1:] or [instruction[:40]]
    return "Let me look up the customer.", [_call("lookup_customer", {"query": query[0].strip(".,")})]


def _plan_email(instruction: str, orders: list[str]) -> tuple[str, list[dict]]:
    text = instruction.lower()
    name = next((k for k in KNOWN if k in text), "dana")
    full, address, their_order = KNOWN[name]
    explicit = EMAIL.findall(instruction)
    shipped = "Your replacement has shipped and should arrive in 2-3 days."
    body = f"Hi {full.split()[0]},\n\n{shipped}\n\nBest,\nThe support team"
    arguments = {
        "to": explicit[0] if explicit else address,
        "order_id": orders[0] if orders else their_order,
        "subject": "An update on your order",
        "body": body,
    }
    return f"I'll email {full} to let them know.", [_call("send_email", arguments)]


def _plan_refund(instruction: str, order: str) -> tuple[str, list[dict]]:
    text = instruction.lower()
    amounts = [float(a) for a in AMOUNT.findall(instruction)]
    amount = amounts[0] if amounts else 10.0
    refund = _call("issue_refund", {"order_id": order, "amount": amount, "reason": "Item arrived damaged"})
    if any(word in text for word in ("check", "status", "look up")):
        lookup = _call("get_order_status", {"order_id": order})
        return f"I'll check order {order} and refund ${amount:.2f} at the same time.", [lookup, refund]
    return f"The customer reports a problem with order {order}; I'll refund ${amount:.2f}.", [refund]


def follow_up(messages: list[dict]) -> tuple[str, list[dict]]:
    """After tool outputs: retry with a real tool where one was made up, else summarise."""
    outputs = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        outputs.append(message.get("content") or "")
    outputs.reverse()
    if any("no tool named 'cancel_order'" in o for o in outputs):
        request = next(m["content"] for m in messages if m.get("role") == "user")
        order = (ORDER.findall(request) or ["A-1001"])[0]
        return "I can't cancel orders myself; I'll leave a note for the team instead.", [
            _call("add_order_note", {"order_id": order, "text": "Customer asked to cancel this order."})
        ]
    return "Here is what happened:\n" + "\n".join(f"- {o}" for o in outputs), []


def respond(messages: list[dict]) -> tuple[str, list[dict]]:
    """Plan from the latest user message (the request, or a reviewer's guidance after tool outputs)."""
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        return follow_up(messages)
    mentioned = [o for m in messages if m.get("role") == "user" for o in ORDER.findall(m.get("content") or "")]
    return plan(last.get("content") or "", mentioned[0] if mentioned else "A-1001")


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address):
        super().__init__(address, Handler)
        self.lock = threading.Lock()
        self.script: list[dict] = []
        self.requests: list[dict] = []
        self.connections = 0  # TCP connections accepted: a client that keeps its connection opens one

    def finish_request(self, request, client_address):
        with self.lock:
            self.connections += 1
        super().finish_request(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


def completion(request: dict, content: str, calls: list[dict]) -> dict:
    seed = hashlib.sha256(json.dumps(request.get("messages", []), sort_keys=True).encode()).hexdigest()[:12]
    tool_calls = [
        {
            "id": call.get("id") or f"call_{seed}_{i}",
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"]),
            },
        }
        for i, call in enumerate(calls)
    ]
    message = {"role": "assistant", "content": content or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{seed}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "reviewhub-demo"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real model APIs do (every answer has a Content-Length)

    def log_message(self, format, *args):
        pass

    def _json(self, status: int, body) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            return self._json(200, {"object": "list", "data": [{"id": "reviewhub-demo", "object": "model"}]})
        if self.path == "/_requests":
            with self.server.lock:
                return self._json(200, self.server.requests)
        return self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = self._body()
        if self.path == "/_script":
            with self.server.lock:
                self.server.script.extend(body.get("replies", []))
            return self._json(200, {"queued": len(self.server.script)})
        if self.path == "/_reset":
            with self.server.lock:
                self.server.script.clear()
                self.server.requests.clear()
            return self._json(200, {"ok": True})
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._json(404, {"error": {"message": "not found"}})
        with self.server.lock:
            self.server.requests.append(body)
            scripted = self.server.script.pop(0) if self.server.script else None
        if scripted is None:
            content, calls = respond(body.get("messages", []))
            return self._json(200, completion(body, content, calls))
        if scripted.get("delay"):
            time.sleep(scripted["delay"])
        if scripted.get("error"):
            return self._json(scripted["error"], {"error": {"message": "scripted failure", "type": "server_error"}})
        if scripted.get("malformed"):
            return self._json(200, {"id": "x", "object": "chat.completion", "choices": []})
        return self._json(200, completion(body, scripted.get("content") or "", scripted.get("tool_calls") or []))


def serve(host: str = "127.0.0.1", port: int = 0) -> ModelServer:
    """Start a server in a background thread (port 0 picks a free one)."""
    server = ModelServer((host, port))
    threading.Thread(target=server.serve_forever, daemon=True, name="model-server").start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args()
    server = ModelServer((options.host, options.port))
    print(f"Scripted model server on {server.url}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
