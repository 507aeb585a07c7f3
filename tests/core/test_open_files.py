"""A process that holds many sessions makes room for their files: the soft open-file limit goes up
to the hard one, never to an unlimited one, and falls back where the system refuses."""

from __future__ import annotations

import resource

import pytest

from omnienv.core.open_files import UNLIMITED_ROOM, make_room_for_files

UNLIMITED = resource.RLIM_INFINITY


def test_the_soft_limit_goes_up_to_the_hard_one(low_file_limit: int) -> None:
    assert make_room_for_files() == low_file_limit
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (low_file_limit, low_file_limit)
    assert make_room_for_files() == low_file_limit  # already there: left as it is


class FakeLimits:
    """The open-file limits of a system this machine is not (an unlimited hard limit, macOS's
    OPEN_MAX): what ``setrlimit`` accepts is up to ``accepts``."""

    def __init__(self, soft: int, hard: int, accepts: int) -> None:
        self.limits, self.accepts, self.asked = (soft, hard), accepts, []

    def getrlimit(self, _: int) -> tuple[int, int]:
        return self.limits

    def setrlimit(self, _: int, limits: tuple[int, int]) -> None:
        self.asked.append(limits[0])
        if limits[0] == UNLIMITED or limits[0] > self.accepts:
            raise ValueError("current limit exceeds maximum limit")
        self.limits = limits


@pytest.mark.parametrize(
    ("accepts", "wanted", "expected", "asked"),
    [
        (1 << 20, 0, UNLIMITED_ROOM, [UNLIMITED_ROOM]),  # Linux: room, not an unlimited soft limit
        (1 << 20, 100_000, 100_000, [100_000]),
        (10240, 16_640, 10240, [UNLIMITED_ROOM, 16_640, 10240]),  # macOS caps at OPEN_MAX
        (10240, 5000, 5000, [UNLIMITED_ROOM, 5000]),
        (100, 0, 256, [UNLIMITED_ROOM, 10240]),  # nothing accepted: the limit stays
    ],
)
def test_under_an_unlimited_hard_limit_room_is_asked_for_not_infinity(
    monkeypatch: pytest.MonkeyPatch, accepts: int, wanted: int, expected: int, asked: list[int]
) -> None:
    system = FakeLimits(256, UNLIMITED, accepts)
    monkeypatch.setattr(resource, "getrlimit", system.getrlimit)
    monkeypatch.setattr(resource, "setrlimit", system.setrlimit)
    assert make_room_for_files(wanted) == expected
    assert system.asked == asked
    assert system.limits == (expected, UNLIMITED)
