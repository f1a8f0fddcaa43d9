"""Helpers shared by the tests."""

resumed: list[int] = []


def record_resume(run_id: int) -> None:
    resumed.append(run_id)
