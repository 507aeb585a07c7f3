"""SkyRL Gym (skyrl-gym, in its own virtualenv): ``skyrl_gym.make`` on each matrix environment, run by the driver."""

from __future__ import annotations

from typing import Any

from tests.matrix.frameworks.gem import run_driver


def collect() -> dict[str, dict[str, Any]]:
    return run_driver("skyrl", "tests.matrix.drivers.skyrl")
