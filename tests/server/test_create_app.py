"""create_app's settings: a misspelt one or a config of the wrong kind is named with its fix."""

from __future__ import annotations

import re

import pytest

from omnienv.app import create_app
from omnienv.core import InvalidTypeError, InvalidValueError, UsageError
from omnienv.envs.echo import Echo
from omnienv.server.config import ServerConfig


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


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (5, "got int 5: pass an Environment subclass or a registered name, such as create_app('wordle')"),
        (None, "got NoneType None"),
        (Echo(), "pass its class, Echo, not an instance"),
    ],
)
def test_what_is_not_an_environment_is_refused_naming_the_fix(env: object, said: str) -> None:
    with pytest.raises(InvalidTypeError) as caught:
        create_app(env)  # type: ignore[arg-type]
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, TypeError)
    assert said in caught.value.message


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"max_sessions": "3"}, "max_sessions must be a whole number"),
        ({"idle_timeout": 0}, "idle_timeout must be > 0 seconds"),
        ({"allow_hosts": (5,)}, "allow_hosts (--allow-host): each entry must be a str, got int 5"),
        ({"allow_origins": ["ftp://x"]}, "allow_origins (--allow-origin)"),
    ],
)
def test_a_bad_setting_is_a_usage_error_and_still_a_value_error(setting: dict[str, object], said: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        ServerConfig(**setting)  # type: ignore[arg-type]
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ValueError)
    assert said in caught.value.message
