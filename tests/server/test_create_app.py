"""create_app's settings: a misspelt one or a config of the wrong kind is named with its fix."""

from __future__ import annotations

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
