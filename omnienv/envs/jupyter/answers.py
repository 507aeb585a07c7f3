"""Checking a submitted answer by its value, never by substring.

The reference environment counted an answer right when the expected text occurred anywhere in the
output, so printing every integer from 0 to 10**6 solved every counting task. Here the whole
answer is parsed: numbers compare as numbers (within the task's tolerance, with thousands
separators and a trailing ``.0`` allowed), text compares after trimming, lower-casing and
collapsing whitespace; in a list ("a, b, c") the spaces around commas do not count.
"""

from __future__ import annotations

import math
import re

__all__ = ["answers_match", "normalise_text", "parse_number"]

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_WHOLE = re.compile(r"([+-]?\d+)(\.0*)?")
_WRAPPERS = "\"'`*"
_LIST_COMMA = re.compile(r"\s*,\s*")


def normalise_text(text: str) -> str:
    """Trim quotes, code marks and final full stops; lower-case; collapse whitespace.

    One pass over each end (an answer of the agent's may be megabytes of ``. . .``): at the end,
    quotes, spaces and full stops go, but a number's own point stays (``"3."``)."""
    text = " ".join(str(text).split()).lstrip(_WRAPPERS + " ")
    core = text.rstrip(_WRAPPERS + " .")
    if text[len(core) : len(core) + 1] == "." and _NUMBER.fullmatch(core + "."):
        core += "."
    return core.casefold()


def parse_number(text: str) -> float | None:
    """The number ``text`` is, as a whole (``"1,234.5"`` yes, ``"about 12"`` no), or None."""
    cleaned = _number_text(text)
    if not _NUMBER.fullmatch(cleaned):
        return None
    value = float(cleaned)
    return value if math.isfinite(value) else None


def _number_text(text: str) -> str:
    return normalise_text(text).replace(",", "").replace("_", "")


def answers_match(given: str, expected: int | float | str, tolerance: float = 0.0) -> bool:
    """Whether ``given`` is ``expected``: numbers within ``tolerance``, text after normalising."""
    if isinstance(expected, bool) or not isinstance(expected, int | float):
        return _LIST_COMMA.sub(",", normalise_text(given)) == _LIST_COMMA.sub(",", normalise_text(str(expected)))
    value = parse_number(given)
    if value is None:
        return False
    if isinstance(expected, int) and tolerance == 0:
        whole = _WHOLE.fullmatch(_number_text(given))  # exactly: past 2**53 a float is not the integer
        return int(whole.group(1)) == expected if whole else value == expected
    return abs(value - expected) <= tolerance + 1e-12 * max(1.0, abs(expected))
