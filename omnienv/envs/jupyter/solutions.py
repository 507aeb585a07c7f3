"""Reference solutions, one per task family: the code a competent agent would run.

Each is one tool call whose output ends with ``ANSWER: <value>``; the oracle
(:mod:`.player`) plays them through the tools to prove every task solvable as posed. A solution
is written next to its family's generator, but it runs in the kernel and knows only what the
question states (its parameters, set as variables at the top), so it has to get the rest from
the files. Solutions stay out of ``Task.data``: nothing that ships with a task hints at its answer.
"""

from __future__ import annotations

import shlex
from typing import Any

from omnienv.envs.jupyter.families import Solution
from omnienv.envs.jupyter.tasks import FAMILIES

__all__ = ["SOLUTIONS", "solution"]

SOLUTIONS: dict[str, Solution] = {name: family.solution for name, family in FAMILIES.items()}


def solution(family: str, params: dict[str, Any]) -> tuple[str, str]:
    """``("code", source)`` or ``("shell", command)`` solving a task of ``family``."""
    found = SOLUTIONS[family]
    if found.kind == "shell":
        header = "".join(f"{name}={shlex.quote(str(value))}\n" for name, value in params.items())
    else:
        header = "".join(f"{name} = {value!r}\n" for name, value in params.items())
    return found.kind, header + found.source
