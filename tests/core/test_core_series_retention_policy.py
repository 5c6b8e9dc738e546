"""The series retention setting: its grammar, the tier a job of a given age is in, clear errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from profilerhub_core.retention import SeriesRetention, Tier, parse_retention
from profilerhub_core.settings import Settings

DAY = timedelta(days=1)


def test_cloudwatchs_tiers_read_back_and_place_each_age() -> None:
    policy = parse_retention("full:15d, 60s:63d, 1h:455d")
    assert policy.tiers == (Tier(0.0, 15 * DAY), Tier(60.0, 63 * DAY), Tier(3600.0, 455 * DAY))
    assert str(policy) == "full:15d,1m:63d,1h:455d"
    assert policy.rolled_resolutions == (60.0, 3600.0)
    assert policy.due(14 * DAY) == Tier(0.0, 15 * DAY)
    assert policy.due(15 * DAY).resolution_s == 60.0  # the boundary belongs to the next tier
    assert policy.due(100 * DAY).resolution_s == 3600.0
    assert policy.due(455 * DAY) is None  # deleted


def test_forever_keeps_the_last_tier_and_the_empty_policy_keeps_everything() -> None:
    policy = parse_retention("500ms:90m,1h:forever")
    assert policy.due(timedelta(0)) == Tier(0.5, timedelta(minutes=90))  # rolled from the start
    assert policy.due(10_000 * DAY) == Tier(3600.0, None)
    assert parse_retention("  ") == SeriesRetention()
    assert SeriesRetention().due(10_000 * DAY) == Tier(0.0, None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("15d", "is not RESOLUTION:UNTIL"),
        ("full:15 days", "not a duration"),
        ("60s:1d,30s:2d", "finest resolution to the coarsest"),
        ("60s:2d,1h:1d", "must end later than the one before"),
        ("60s:forever,1h:2d", "only the last"),
        ("2h:1d", "between 0.1 s and 3600 s"),
        ("full:1d,full:2d", "finest resolution to the coarsest"),
        ("full:0s", "longer than 0 s"),
    ],
)
def test_a_bad_policy_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_retention(text)


def test_the_setting_is_checked_when_the_settings_load() -> None:
    assert Settings(series_retention="full:15d,60s:63d").series_retention_policy.rolled_resolutions == (60.0,)
    says = "PROFILERHUB_SERIES_RETENTION '60s:1d,30s:2d': series retention tiers go"
    with pytest.raises(ValidationError, match=says):
        Settings(series_retention="60s:1d,30s:2d")
