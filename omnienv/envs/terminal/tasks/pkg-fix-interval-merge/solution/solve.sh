#!/bin/bash
set -e
cd /app
cat > intervals/core.py <<'PYEOF'
"""Closed integer intervals given as (start, end) pairs with start <= end."""


def merge(intervals):
    """Merge overlapping or touching intervals.

    Returns a new list of (start, end) tuples sorted by start, with no two of them overlapping
    or touching ((1, 3) and (3, 5) become (1, 5)). The argument is not modified. ValueError if
    some start > end.
    """
    result = []
    for start, end in sorted(intervals):
        if start > end:
            raise ValueError(f"bad interval {(start, end)!r}")
        if result and start <= result[-1][1]:
            result[-1] = (result[-1][0], max(result[-1][1], end))
        else:
            result.append((start, end))
    return result


def total_length(intervals):
    """Length of the union of the intervals (each (s, e) covers e - s)."""
    return sum(end - start for start, end in merge(intervals))


def gaps(intervals, lo, hi):
    """The parts of [lo, hi] covered by no interval, as a sorted list of (start, end) tuples."""
    out, cur = [], lo
    for start, end in merge(intervals):
        if end < lo or start > hi:
            continue
        if start > cur:
            out.append((cur, start))
        cur = max(cur, end)
    if cur < hi:
        out.append((cur, hi))
    return out
PYEOF
python3 -m unittest 2>&1 | tail -n 3
