"""The terminal environment: Harbor-format tasks in a sandboxed shell (see :mod:`.env`)."""

from pathlib import Path

from omnienv.core import EnvironmentBase
from omnienv.envs.terminal.env import SUITE, Terminal, harbor_environment
from omnienv.envs.terminal.export import export_harbor, exported_environment
from omnienv.envs.terminal.harbor import HarborTask, HarborTaskError, find_tasks, read_task

__all__ = [
    "SUITE",
    "HarborTask",
    "HarborTaskError",
    "Terminal",
    "environment_for_path",
    "export_harbor",
    "find_tasks",
    "harbor_environment",
    "read_task",
]


def environment_for_path(path: Path) -> type[EnvironmentBase]:
    """The environment a folder of Harbor tasks is: the original one for tasks omnienv exported,
    else the terminal environment over them."""
    return exported_environment(path) or harbor_environment(path)
