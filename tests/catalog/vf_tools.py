"""A tiny classic Verifiers tool environment (``vf.ToolEnv``): arithmetic with an ``add`` tool.

Loaded by tests/catalog/verifiers_checks.py inside the verifiers 0.3.1 virtualenv as
``verifiers/tests.catalog.vf_tools``. ``add`` refuses negative numbers: verifiers shows that error
to the model, unless ``stop_on_error=True`` lists it in ``stop_errors``, which makes verifiers stop
the rollout on it (an infrastructure failure for omnienv).
"""

from __future__ import annotations

from typing import Any

import verifiers as vf
from datasets import Dataset

ROWS = [{"question": f"Use the add tool to compute {a} + {b}.", "answer": str(a + b)} for a, b in [(2, 3), (40, 2)]]


def add(a: int, b: int) -> str:
    """Add two non-negative integers.

    Args:
        a: The first number.
        b: The second number.
    """
    if a < 0 or b < 0:
        raise ValueError("add takes non-negative numbers only")
    return str(a + b)


def final_answer(completion: Any, answer: str) -> float:
    """1 when the final reply (no tool call) contains the answer."""
    last = completion[-1] if completion else None
    content = getattr(last, "content", None) if last is not None else None
    return 1.0 if isinstance(content, str) and answer in content else 0.0


def load_environment(stop_on_error: bool = False, max_turns: int = 6) -> vf.Environment:
    return vf.ToolEnv(
        dataset=Dataset.from_list(ROWS),
        tools=[add],
        max_turns=max_turns,
        stop_errors=[ValueError] if stop_on_error else None,
        rubric=vf.Rubric(funcs=[final_answer]),
    )
