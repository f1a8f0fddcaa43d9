"""services.Renewing: every lease held in a process is renewed by one thread of its own, when due; entering a
block starts no thread (a thread per block cost a resumption its start-up between the claim and the body)."""

import threading
import time

from approvals.services import Renewing


def renewal_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "lease-renewal")


def wait_for(condition, ceiling: float = 10.0) -> bool:
    deadline = time.monotonic() + ceiling
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_blocks_held_at_once_are_renewed_by_one_thread():
    counts = [0, 0, 0]

    def renewer(i):
        def renew():
            counts[i] += 1
            return True

        return renew

    with Renewing(renewer(0), seconds=0.3), Renewing(renewer(1), seconds=0.3), Renewing(renewer(2), seconds=0.3):
        assert wait_for(lambda: min(counts) >= 2)  # every 0.2 s at the least
        assert renewal_threads() == 1
    with Renewing(renewer(0), seconds=0.3):
        assert renewal_threads() == 1  # the same thread again: none started for the block


def test_a_block_left_is_renewed_no_more():
    count = [0]

    def renew():
        count[0] += 1
        return True

    with Renewing(renew, seconds=0.3):
        assert wait_for(lambda: count[0] >= 1)
    after = count[0]
    time.sleep(0.7)  # three more intervals
    assert count[0] <= after + 1  # at most one that had begun as the block ended


def test_a_lapsed_lease_stops_its_renewal_and_not_the_others():
    lapsing, kept = [0], [0]

    def lapse():
        lapsing[0] += 1
        return None  # the lease is gone (taken over, or the call finished)

    def keep():
        kept[0] += 1
        return True

    with Renewing(lapse, seconds=0.3) as gone, Renewing(keep, seconds=0.3):
        assert wait_for(lambda: kept[0] >= 3)
        assert gone.lapsed and lapsing[0] == 1


def test_a_renewal_that_fails_is_retried_next_time(caplog):
    calls = [0]

    def flaky():
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("database restarting")
        return True

    with Renewing(flaky, seconds=0.3) as held:
        assert wait_for(lambda: calls[0] >= 2)
        assert not held.lapsed
    assert "renewing a lease failed" in caplog.text
