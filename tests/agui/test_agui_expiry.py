"""An AG-UI interrupt's expiresAt as the call's deadline (agui/interrupts.py)."""

from datetime import UTC, datetime, timedelta, timezone

from agui.interrupts import _expiry


def test_an_expiry_without_an_offset_is_read_as_utc():
    assert _expiry("2026-12-06T10:00:00") == datetime(2026, 12, 6, 10, tzinfo=UTC)


def test_an_expiry_with_z_or_an_offset_keeps_its_moment():
    assert _expiry("2026-12-06T10:00:00Z") == datetime(2026, 12, 6, 10, tzinfo=UTC)
    assert _expiry("2026-12-06T11:00:00+01:00") == datetime(2026, 12, 6, 11, tzinfo=timezone(timedelta(hours=1)))


def test_a_missing_or_unreadable_expiry_sets_no_deadline():
    assert _expiry(None) is None
    assert _expiry("next tuesday") is None
