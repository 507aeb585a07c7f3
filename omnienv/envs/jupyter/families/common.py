"""What every task family shares: the built task, the family record, file writers, tolerances.

A family is a function of a seeded ``random.Random`` returning a :class:`Built`: the question,
the files the episode starts with and the exact answer, computed here in plain Python. The
:func:`family` decorator pairs it with its reference solution, the code a competent agent would
run in the kernel (pandas, numpy or the shell) to find the answer from the files alone. The
solution never sees the generator: it gets the question's parameters as variables and nothing else.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Built",
    "Family",
    "Solution",
    "csv_bytes",
    "decimals",
    "family",
    "jsonl_bytes",
    "lines_bytes",
    "strict_winner",
]


@dataclass(frozen=True, slots=True)
class Built:
    """Everything about one task: what the agent is asked, its files, and the answer.

    ``params`` are the values the question names (a region, a threshold): the reference solution
    gets them as variables, so it has to find everything else in the files.
    """

    question: str
    answer: int | float | str
    tolerance: float = 0.0
    files: dict[str, bytes] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Solution:
    """One tool call that prints ``ANSWER: <value>``: Python for the kernel, or a shell command."""

    kind: Literal["code", "shell"]
    source: str


@dataclass(frozen=True, slots=True)
class Family:
    """A task generator and the reference solution that proves its tasks answerable from the files."""

    name: str
    make: Callable[[random.Random], Built]
    solution: Solution

    def __call__(self, rng: random.Random) -> Built:
        return self.make(rng)


def family(
    code: str | None = None, *, shell: str | None = None
) -> Callable[[Callable[[random.Random], Built]], Family]:
    """Make a generator a :class:`Family` whose reference solution is ``code`` (Python) or ``shell``."""
    if (code is None) == (shell is None):
        raise TypeError("give a family exactly one reference solution: code= or shell=")
    solution = Solution("code", code.strip()) if code is not None else Solution("shell", str(shell).strip())

    def wrap(make: Callable[[random.Random], Built]) -> Family:
        return Family(make.__name__, make, solution)

    return wrap


def csv_bytes(header: list[str], rows: Iterable[Iterable[Any]], delimiter: str = ",") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def jsonl_bytes(records: Iterable[Any]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def lines_bytes(lines: Iterable[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def decimals(digits: int) -> float:
    """Tolerance for an answer asked 'rounded to ``digits`` decimals'.

    Half a unit in the last asked place: the correctly rounded value passes however the agent's
    floating-point sums were ordered, an unrounded one passes too, and any other value fails.
    """
    return 0.5 * 10**-digits + 1e-9


def strict_winner(totals: Counter[str] | dict[str, float], margin: float = 0.0) -> str | None:
    """The key with the largest value when it beats the runner-up by more than ``margin``, else None.

    Families re-draw their data until the winner is clear, so a question never rests on a tie.
    """
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    if not ranked or (len(ranked) > 1 and ranked[0][1] - ranked[1][1] <= margin):
        return None
    return ranked[0][0]
