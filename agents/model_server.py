"""A scripted, deterministic OpenAI-compatible model server.

It plays whatever agent the apps script (an app registers a script in its
AppConfig.ready(): `model_server.register_script(respond)`; the demo shop's is
shop/script.py), so the demo and the tests go through the real openai client
over real HTTP. A script gets the chat request and returns (content, tool calls),
or None to leave it to the next script (every answer comes as a stream when the
request says "stream": true). Tests can also queue exact
replies:  POST /_script  {"replies": [{"content": "...", "tool_calls": [{"name": "...", "arguments": {...}}]},
                                        {"error": 500}, {"malformed": true}]}
GET /_requests returns the chat requests received so far; POST /_reset clears both.

Run it:  python manage.py model_server --port 8765
"""

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[str, list[dict]]
_scripts: list[Callable[[dict], Reply | None]] = []


def register_script(script: Callable[[dict], Reply | None]) -> None:
    """Add a script (once): it answers chat requests nobody queued a reply for, or returns None."""
    if script not in _scripts:
        _scripts.append(script)


def respond(request: dict) -> Reply:
    """The first registered script's answer; without one, a reply that ends the run."""
    for script in _scripts:
        reply = script(request)
        if reply is not None:
            return reply
    return "I have no script for this request, so I stop here.", []


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
        host = host.decode() if isinstance(host, bytes) else host
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
    message: dict[str, object] = {"role": "assistant", "content": content or None}
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


def chunks(request: dict, answer: dict) -> bytes:
    """The same completion as a stream (`"stream": true`): one chunk with the whole message, one with the finish
    reason (and the usage when stream_options asks), then [DONE] — as Server-Sent Events."""
    choice = answer["choices"][0]
    message = choice["message"]
    delta = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    head = {key: answer[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    events = [head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}]
    events.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append(head | {"choices": [], "usage": answer["usage"]})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


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

    def _answer(self, request: dict, answer: dict) -> None:
        if not request.get("stream"):
            return self._json(200, answer)
        data = chunks(request, answer)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
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
            content, calls = respond(body)
            return self._answer(body, completion(body, content, calls))
        if scripted.get("delay"):
            time.sleep(scripted["delay"])
        if scripted.get("error"):
            return self._json(scripted["error"], {"error": {"message": "scripted failure", "type": "server_error"}})
        if scripted.get("malformed"):
            return self._json(200, {"id": "x", "object": "chat.completion", "choices": []})
        return self._answer(body, completion(body, scripted.get("content") or "", scripted.get("tool_calls") or []))


def serve(host: str = "127.0.0.1", port: int = 0) -> ModelServer:
    """Start a server in a background thread (port 0 picks a free one)."""
    server = ModelServer((host, port))
    threading.Thread(target=server.serve_forever, daemon=True, name="model-server").start()
    return server
