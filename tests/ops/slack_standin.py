"""A local stand-in for Slack's Web API: records each method called and answers as Slack would,
so the Slack tests need no internet (slack-sdk's WebClient takes the base URL)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


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
