"""An agent process written as a user writes one: ReviewHub's client and a plain tool function, nothing of
ReviewHub's own code. tests/remote/test_lease_processes.py starts it and kills it at chosen points.

    python tests/remote/lease_agent.py CALL_ID MODE EFFECTS_FILE

MODE: "plain" runs the tool; "hang_before" stops inside the body before its effect, "hang_after" after it (both
then wait to be killed); "slow" takes SLOW_SECONDS before its effect. The tool is idempotent the way a payment API
is: an execution key it has seen does nothing twice. It prints one JSON line: what execute_once said.
"""

import json
import os
import sys
import time
from pathlib import Path

from reviewhub_client import OutcomeUnknown, ReviewHub, execution_key


def refund_tool(mode: str, effects: Path):
    def issue_refund(order_id: str, amount: float, reason: str = "") -> str:
        key = execution_key()
        with open(f"{effects}.attempts", "a") as attempts:
            attempts.write(key + "\n")
        if mode == "hang_before":
            time.sleep(600)
        if mode == "slow":
            time.sleep(float(os.environ["SLOW_SECONDS"]))
        seen = effects.read_text().split() if effects.exists() else []
        if key not in seen:
            with open(effects, "a") as done:
                done.write(key + "\n")
        if mode == "hang_after":
            time.sleep(600)
        return f"Refunded ${amount} on order {order_id}"

    return issue_refund


def main() -> None:
    call_id, mode, effects = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    with ReviewHub(os.environ["REVIEWHUB_URL"], os.environ["REVIEWHUB_TOKEN"]) as hub:
        try:
            execution = hub.execute_once(call_id, refund_tool(mode, effects))
        except OutcomeUnknown as exc:
            print(json.dumps({"outcome_unknown": str(exc)}), flush=True)
            return
    print(json.dumps({"ran": execution.ran, "output": execution.output}), flush=True)


if __name__ == "__main__":
    main()
