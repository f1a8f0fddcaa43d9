"""Helpers for the framework tests: run an example (examples/<framework>_refund.py) as its own process, outside
the project (its working directory and sys.path do not hold the project root, since the OpenAI Agents SDK
imports as `agents`), and decide its calls as a reviewer does, through the call page's HTML forms."""

import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from tests.livestack import http_login
from tests.stack import ROOT

# Each variant: the example it runs and what its environment adds. LangGraph runs its middleware's default mode
# (batched) and its per_call mode.
VARIANTS = {
    "langgraph": ("langgraph", {}),
    "langgraph_per_call": ("langgraph", {"EXAMPLE_INTERRUPT_MODE": "per_call"}),
    "openai_agents": ("openai_agents", {}),
    "pydantic_ai": ("pydantic_ai", {}),
}
FRAMEWORKS = list(VARIANTS)
REQUEST = "Order A-1001 arrived broken. Please refund $490."
OUTSIDE = {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY"}


class Example:
    """One framework's example with its own data folder (its checkpoints or stored runs, and its shop)."""

    def __init__(self, variant: str, data: Path, *, hub_url: str, token: str, model_url: str):
        framework, extra = VARIANTS[variant]
        self.variant = variant
        self.script = ROOT / "examples" / f"{framework}_refund.py"
        self.data = data
        data.mkdir(parents=True, exist_ok=True)
        self.env = self.outside_env()
        self.env |= {"REVIEWHUB_URL": hub_url, "REVIEWHUB_TOKEN": token, "OPENAI_BASE_URL": model_url}
        # A refund that takes a second, as a payment provider's would: two resumers are then both inside the
        # tool step at once, as they would be in every trial without the execution claim.
        self.env |= {"EXAMPLE_DATA": str(data), "OPENAI_API_KEY": "unused", "EXAMPLE_PAYMENT_SECONDS": "1"} | extra

    @staticmethod
    def outside_env() -> dict[str, str]:
        """This process's environment without what points into the project (its path, settings, services)."""
        return {k: v for k, v in os.environ.items() if k not in OUTSIDE}

    def spawn(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, str(self.script), *args],
            cwd=self.data,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def finish(self, process: subprocess.Popen, timeout: float = 180) -> dict:
        """The last event the process printed, once it exited 0."""
        out, err = process.communicate(timeout=timeout)
        assert process.returncode == 0, f"{self.script.name} exited {process.returncode}:\n{out}\n{err[-4000:]}"
        return json.loads(out.strip().splitlines()[-1])

    def run(self, *args: str) -> dict:
        return self.finish(self.spawn(*args))

    def fail(self, *args: str, timeout: float = 180) -> str:
        """Run a command that must end with an error (a non-zero exit); returns its stderr."""
        process = self.spawn(*args)
        out, err = process.communicate(timeout=timeout)
        assert process.returncode != 0, f"{self.script.name} exited 0:\n{out}\n{err[-4000:]}"
        return err

    def refunds(self) -> list[tuple]:
        """The refunds the example's tool made: (order_id, amount)."""
        with sqlite3.connect(self.data / "shop.sqlite3") as conn:
            return conn.execute("select order_id, amount from refunds").fetchall()


class Reviewer:
    """A reviewer in a browser's place: logged in through the login form, posting the call page's forms."""

    def __init__(self, base_url: str, username: str, password: str):
        self.base_url = base_url
        self.cookie = http_login(base_url, username, password)
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _get(self, path: str) -> str:
        request = urllib.request.Request(self.base_url + path, headers={"Cookie": self.cookie})
        return self.opener.open(request, timeout=15).read().decode()

    def decide(self, call_url: str, action: str, fields: dict) -> int:
        """Post the call panel's form for action (approve, edit, reject, respond) with the page's CSRF token and
        the hash of the arguments it shows."""
        path = urllib.parse.urlsplit(call_url).path
        page = self._get(path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        shown = re.search(r'name="arguments_hash" value="([^"]+)"', page).group(1)
        form = {**fields, "csrfmiddlewaretoken": token, "arguments_hash": shown}
        headers = {"Cookie": self.cookie, "Referer": self.base_url + path, "Origin": self.base_url}
        request = urllib.request.Request(
            f"{self.base_url}{path}{action}/", data=urllib.parse.urlencode(form).encode(), headers=headers
        )
        with self.opener.open(request, timeout=15) as response:
            return response.status

    def edit(self, call_url: str, arguments: dict) -> int:
        return self.decide(call_url, "edit", {f"arg_{name}": value for name, value in arguments.items()})

    def reject(self, call_url: str, reason: str) -> int:
        return self.decide(call_url, "reject", {"reason": reason})

    def approve(self, call_url: str) -> int:
        return self.decide(call_url, "approve", {})

    def respond(self, call_url: str, reason: str, guidance: str) -> int:
        """Reject with guidance for the agent (the panel's "send back" form): the agent reads both."""
        return self.decide(call_url, "respond", {"reason": reason, "guidance": guidance})

    def page(self, call_url: str) -> str:
        return self._get(urllib.parse.urlsplit(call_url).path)


def model_requests(servers: dict) -> list[dict]:
    """The chat requests the scripted model server received."""
    with urllib.request.urlopen(servers["model"].removesuffix("/v1") + "/_requests", timeout=10) as response:
        return json.loads(response.read())


def tool_messages(servers: dict) -> list[str]:
    """Every tool result the model read, once each (later requests repeat the earlier ones)."""
    seen: dict[str, str] = {}
    for request in model_requests(servers):
        for message in request["messages"]:
            if message.get("role") == "tool":
                seen[message.get("tool_call_id") or str(len(seen))] = str(message.get("content"))
    return list(seen.values())
