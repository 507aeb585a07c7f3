"""A Linux desktop for computer-use agents: Xvfb displays, 19 computer-use tools, 35 checked tasks."""

from omnienv.envs.desktop.checks import DesktopTask
from omnienv.envs.desktop.env import Coordinates, Desktop, task_completed
from omnienv.envs.desktop.tasks import DESKTOP_TASKS

__all__ = ["DESKTOP_TASKS", "Coordinates", "Desktop", "DesktopTask", "task_completed"]
