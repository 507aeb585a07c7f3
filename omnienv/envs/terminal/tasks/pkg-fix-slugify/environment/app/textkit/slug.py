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
    text = unicodedata.normalize("NFKC", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", sep, text)
    text = text.lower().strip(sep)
    if max_length is not None:
        text = text[:max_length]
    return text
