"""Word helpers."""


def truncate_words(text, n, ellipsis="..."):
    """Return the first n words of text joined by single spaces.

    Words are separated by any whitespace. If text has more than n words, ellipsis is appended
    (directly after the last kept word). n must be at least 1, otherwise ValueError is raised.
    """
    words = text.split()
    out = " ".join(words[:n])
    if len(words) >= n:
        out += ellipsis
    return out
