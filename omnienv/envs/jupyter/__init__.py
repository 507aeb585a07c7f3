"""Jupyter, the reference code-agent environment. See :mod:`omnienv.envs.jupyter.env`."""

from omnienv.envs.jupyter.answers import answers_match
from omnienv.envs.jupyter.env import Jupyter, NotebookCell
from omnienv.envs.jupyter.tasks import build, jupyter_tasks

__all__ = ["Jupyter", "NotebookCell", "answers_match", "build", "jupyter_tasks"]
