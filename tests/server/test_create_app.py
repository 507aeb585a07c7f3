"""create_app's settings: a misspelt one or a config of the wrong kind is named with its fix."""

from __future__ import annotations

import re

import pytest

from omnienv.app import create_app
from omnienv.core import UsageError


def test_a_misspelt_setting_is_refused_naming_the_closest() -> None:
    with pytest.raises(UsageError, match=r"create_app has no setting 'max_sesions'\. Did you mean 'max_sessions'\?"):
        create_app("echo", max_sesions=3)


def test_a_config_that_is_not_a_server_config_is_refused() -> None:
    with pytest.raises(UsageError, match="config must be a ServerConfig, got dict"):
        create_app("echo", {"max_sessions": 3})  # type: ignore[arg-type]


def test_a_known_setting_still_applies() -> None:
    assert create_app("echo", max_sessions=3).state.manager.config.max_sessions == 3


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"max_sessions": "3"}, "max_sessions must be a whole number, got str '3'"),
        ({"max_sessions": None}, "max_sessions must be a whole number, got NoneType None"),
        ({"step_timeout": "x"}, "step_timeout must be a number of seconds or None, got str 'x'"),
        ({"allow_hosts": 5}, "allow_hosts must be a sequence of strings, got int 5"),
        ({"allow_hosts": "example.org"}, "allow_hosts must be a sequence of strings, got str"),
        ({"max_sessions": 0}, "max_sessions must be >= 1"),
    ],
)
def test_a_setting_of_the_wrong_type_or_range_is_named(setting: dict[str, object], said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        create_app("echo", **setting)
