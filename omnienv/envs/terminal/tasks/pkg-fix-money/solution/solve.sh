#!/bin/bash
set -e
cd /app
cat > ledger/money.py <<'PYEOF'
"""Money amounts as Decimal, in dollars and cents."""
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")
def to_cents(value):
    """value (int, str, float or Decimal) as a Decimal rounded to cents, halves away from zero.

    A float is taken by its shortest repr (2.675 -> "2.675" -> 2.68), never its binary value.
    """
    if isinstance(value, float):
        value = repr(value)
    try:
        return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise ValueError(f"not an amount: {value!r}") from None


def parse_amount(text):
    """Parse "$1,234.50", "-$5", "($12.00)" (parentheses mean negative), " 3.5 " -> Decimal cents.

    ValueError for anything else (empty, letters, several signs).
    """
    s = text.strip()
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    if s.startswith("-"):
        if negative:
            raise ValueError(f"not an amount: {text!r}")
        negative, s = True, s[1:]
    s = s.replace("$", "", 1).replace(",", "")
    if not s or not all(c.isdigit() or c == "." for c in s) or s.count(".") > 1 or s == ".":
        raise ValueError(f"not an amount: {text!r}")
    value = to_cents(s)
    return -value if negative else value


def format_amount(amount):
    """"-$1,234.50" style: sign first, then $, thousands separators, exactly two decimals."""
    value = to_cents(amount)
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def split(amount, n):
    """Split amount into n >= 1 parts (Decimal cents) that sum exactly to it.

    Parts differ by at most one cent and the larger parts come first; ValueError if n < 1.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    cents = int(to_cents(amount) / CENT)
    base, extra = divmod(cents, n)
    return [(Decimal(base + (1 if i < extra else 0)) * CENT).quantize(CENT) for i in range(n)]
PYEOF
python3 -m unittest 2>&1 | tail -n 3
