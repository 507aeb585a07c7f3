#!/bin/bash
set -e
cd /app
cat > textkit/slug.py <<'PYEOF'
"""URL slugs."""
import re
import unicodedata


def slugify(text, sep="-", max_length=None):
    """Return a URL slug for text.

    Accented letters become their unaccented ASCII letter ("Café" -> "cafe"), the result is
    lowercase, every run of characters other than a-z and 0-9 becomes a single sep, and there
    is no sep at either end. With max_length, the slug is cut to at most max_length characters
    and then any sep left at its end is removed.
    """
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", sep, text.lower())
    text = text.strip(sep)
    if max_length is not None:
        text = text[:max_length].rstrip(sep)
    return text
PYEOF
cat > textkit/words.py <<'PYEOF'
"""Word helpers."""


def truncate_words(text, n, ellipsis="..."):
    """Return the first n words of text joined by single spaces.

    Words are separated by any whitespace. If text has more than n words, ellipsis is appended
    (directly after the last kept word). n must be at least 1, otherwise ValueError is raised.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    words = text.split()
    out = " ".join(words[:n])
    if len(words) > n:
        out += ellipsis
    return out
PYEOF
python3 -m unittest 2>&1 | tail -n 3
