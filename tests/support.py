"""Helpers shared by the tests."""

resumed: list[int] = []


def record_resume(run_id: int, *, approved: bool = False) -> None:
    resumed.append(run_id)
