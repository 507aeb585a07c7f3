#!/bin/bash
set -e
cd /app
cat > roman/convert.py <<'PYEOF'
"""Roman numerals (1 to 3999, standard subtractive form)."""

_NUMERALS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
    (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n):
    """Roman numeral of the integer n; ValueError unless 1 <= n <= 3999."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > 3999:
        raise ValueError(f"out of range: {n!r}")
    out = []
    for value, letters in _NUMERALS:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def from_roman(s):
    """Integer value of a Roman numeral (letters in either case).

    ValueError for anything that is not a valid numeral in standard form: unknown letters,
    the empty string, and non-canonical forms such as "IIII", "IC" or "VX" (a numeral is
    valid exactly when to_roman of its value gives it back).
    """
    s = s.upper()
    if not s or any(ch not in _VALUES for ch in s):
        raise ValueError(f"not a Roman numeral: {s!r}")
    total = 0
    for i, ch in enumerate(s):
        v = _VALUES[ch]
        if i + 1 < len(s) and _VALUES[s[i + 1]] > v:
            total -= v
        else:
            total += v
    if not 1 <= total <= 3999 or to_roman(total) != s:
        raise ValueError(f"not in standard form: {s!r}")
    return total
PYEOF
python3 -m unittest 2>&1 | tail -n 3
