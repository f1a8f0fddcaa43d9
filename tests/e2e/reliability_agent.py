"""A remote agent process for the reliability harness, written as a user writes one: ReviewHub's client and a
plain tool, nothing of ReviewHub's own code. tests/e2e/reliability_targets.py starts it and kills it with SIGKILL.

    python tests/e2e/reliability_agent.py CALL_ID TOOL DIR

It waits for the call's decision (long-poll), then runs TOOL through execute_once. The tool records every attempt
and its effect in DIR, keyed by the execution key ReviewHub gives it; "refund_once" is idempotent the way a
payment API is (a key it has seen does nothing twice), "refund" is not (every run is an effect). A file
DIR/hang-before-CALL_ID (or hang-after-) makes the body stop before (after) its effect, saying so with
DIR/at-before-CALL_ID (at-after-), to be killed there. It prints one JSON line: what execute_once said.
"""

import json
import os
import sys
import time
from pathlib import Path

from reviewhub_client import OutcomeUnknown, ReviewHub, execution_key


def stop_here(folder: Path, point: str, label: str) -> None:
    if (folder / f"hang-{point}-{label}").exists():
        (folder / f"at-{point}-{label}").touch()
        time.sleep(600)


def refund_tool(folder: Path, label: str, idempotent: bool):
    def refund(order_id: str, amount: float) -> str:
        key = execution_key()
        with open(folder / "attempts", "a") as attempts:
            attempts.write(f"{label} {key}\n")
        stop_here(folder, "before", label)
        effects = folder / "effects"
        seen = effects.read_text().split("\n") if effects.exists() else []
        if not (idempotent and f"{label} {key}" in seen):
            with open(effects, "a") as done:
                done.write(f"{label} {key}\n")
        stop_here(folder, "after", label)
        return f"Refunded ${amount} on order {order_id}"

    return refund


def main() -> None:
    call_id, tool, folder = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    with ReviewHub(os.environ["REVIEWHUB_URL"], os.environ["REVIEWHUB_TOKEN"]) as hub:
        (folder / f"waiting-{call_id}").touch()
        hub.wait(call_id)
        try:
            execution = hub.execute_once(call_id, refund_tool(folder, str(call_id), tool == "refund_once"))
        except OutcomeUnknown as exc:
            print(json.dumps({"outcome_unknown": str(exc)}), flush=True)
            return
    print(json.dumps({"ran": execution.ran, "output": execution.output}), flush=True)


if __name__ == "__main__":
    main()
