"""The catch rate measured through the browser: two scripted reviewers in Chromium decide the same kind of queue.

    .venv/bin/python bench/catch_rate_browser.py                 # 15 real refunds and 5 practice calls each
    .venv/bin/python bench/catch_rate_browser.py --real 30 --every 3

As bench/catch_rate.py, but each reviewer is a person in a browser: ReviewHub runs as uvicorn with the production
settings on a PostgreSQL database of its own, and Playwright drives Debian's Chromium. For every call waiting, the
reviewer opens its page and reads the card as shown: "approve-everything" presses Approve (or Approve anyway);
"reads-the-warnings" rejects, with a reason, a card whose facts show a warning or whose arguments name another
order than the user's request, and approves the others. Printed: each one's catch rate with its 95 % Wilson
interval (practice.insight), read from the decisions the pages made. Nothing is executed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.catch_rate import fresh_database, print_results, queue, result_of  # noqa: E402
from bench.common import setup_django  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/reviewhub_bench_catch_browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
CHROMIUM_ARGS += ["--disable-sync", "--no-first-run", "--disable-quic"]
PASSWORD = "bench-" + os.urandom(6).hex()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=int, default=15, help="real refunds each reviewer decides")
    parser.add_argument("--every", type=int, default=3, help="one practice call after every N real ones")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_DB))
    return parser.parse_args()


def start_server(port: int) -> subprocess.Popen:
    """uvicorn with the production settings (plain HTTP on 127.0.0.1), on the database Django was set up on."""
    import urllib.request

    env = os.environ | {"REVIEWHUB_INSECURE_HTTP": "1", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "uvicorn", "reviewhub.asgi:application", "--port", str(port)]
    server = subprocess.Popen([*command, "--log-level", "warning", "--lifespan", "off"], cwd=ROOT, env=env)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit("uvicorn did not start")
            subprocess.run(["sleep", "0.1"])
    raise SystemExit("uvicorn did not answer in 30 s")


def reads_the_warnings(card) -> bool:
    """Approve only when the card shows no warning and its arguments name the order the request names."""
    if card.locator(".facts .warning").count():
        return False
    arguments = json.loads(card.locator("pre.args").first.inner_text())
    return arguments["order_id"] in card.locator("blockquote.request").inner_text()


def decide_in_browser(page, base: str, call_id: int, approves) -> bool:
    page.goto(f"{base}/calls/{call_id}/")
    card = page.locator(f"#call-{call_id}")
    approve = approves(card)
    if approve:
        anyway = card.get_by_role("button", name="Approve anyway")
        (anyway if anyway.count() else card.get_by_role("button", name="Approve", exact=True)).click()
    else:
        card.get_by_label("Reason for rejecting").fill("The card does not add up: not this refund.")
        card.get_by_role("button", name="Reject", exact=True).click()
    card.locator(".outcome").wait_for(timeout=30_000)
    return approve


def review(browser, base: str, name: str, calls: list, approves) -> dict:
    page = browser.new_page()
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    done = {"real_approved": 0, "real_rejected": 0}
    for call_id, practice in calls:
        approved = decide_in_browser(page, base, call_id, approves)
        if not practice:
            done["real_approved" if approved else "real_rejected"] += 1
    page.close()
    return done


def main() -> None:
    args = parse_args()
    fresh_database(args.database_url)
    setup_django(args.database_url)
    from django.contrib.auth import get_user_model
    from playwright.sync_api import sync_playwright

    from approvals.insight import Window
    from approvals.roles import reviewers_group
    from practice.insight import catch_rates

    users = get_user_model().objects
    requester = users.create_user(username="ops-agent")
    reviewers = {"approve-everything": lambda card: True, "reads-the-warnings": reads_the_warnings}
    queues = {}
    for name in reviewers:  # the database is written before the browser's event loop runs (Django refuses within)
        users.create_user(username=name, password=PASSWORD).groups.add(reviewers_group())
        queues[name] = [(call.pk, hasattr(call, "practice")) for call in queue(requester, args.real, args.every)]
    server, base = start_server(args.port), f"http://127.0.0.1:{args.port}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            done = {name: review(browser, base, name, queues[name], approves) for name, approves in reviewers.items()}
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    rows = {row.label: row for row in catch_rates(Window.default(), "reviewer")}
    print_results([result_of(name, rows[name], done[name]) for name in reviewers])


if __name__ == "__main__":
    main()
