"""A tiny classic Verifiers environment: single-turn arithmetic (``vf.SingleTurnEnv``).

Loaded by tests/catalog/verifiers_checks.py inside the verifiers 0.3.1 virtualenv as
``verifiers/tests.catalog.vf_single``. Its datasets are built in memory, nothing comes from the
Hub. ``broken=True`` gives it a reward function that raises.
"""

from __future__ import annotations

from typing import Any

import verifiers as vf
from datasets import Dataset

TRAIN = [{"question": f"What is {a} + {b}?", "answer": str(a + b)} for a, b in [(2, 3), (7, 8), (11, 4)]]
EVAL = [{"question": f"What is {a} * {b}?", "answer": str(a * b)} for a, b in [(6, 7), (3, 9)]]


def text(completion: Any) -> str:
    """The last message's text ("" for an empty completion)."""
    if not completion:
        return ""
    last = completion[-1]
    content = last.get("content") if isinstance(last, dict) else last.content
    return content if isinstance(content, str) else ""


def correct(completion: Any, answer: str) -> float:
    """1 when the reply is exactly the answer."""
    return 1.0 if text(completion).strip() == answer else 0.0


def mentions(completion: Any, answer: str) -> float:
    """Half credit for a reply that contains the answer somewhere."""
    return 1.0 if answer in text(completion) else 0.0


def broken_judge(completion: Any) -> float:
    """A reward function with a bug."""
    raise ZeroDivisionError("the judge divided by zero")


def load_environment(broken: bool = False) -> vf.Environment:
    functions = [correct, mentions, *([broken_judge] if broken else [])]
    rubric = vf.Rubric(funcs=functions, weights=[1.0, 0.5, *([1.0] if broken else [])])
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(TRAIN),
        eval_dataset=Dataset.from_list(EVAL),
        system_prompt="Reply with the number only.",
        rubric=rubric,
    )
