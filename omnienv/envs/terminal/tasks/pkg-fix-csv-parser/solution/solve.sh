#!/bin/bash
set -e
cd /app
cat > minicsv/parser.py <<'PYEOF'
"""A small CSV reader and writer."""


def parse(text, delimiter=","):
    """Parse CSV text into a list of records (lists of strings).

    Records end at "\\n" or "\\r\\n"; a line terminator at the very end of the text does not start
    another record, and the empty text has no records. Fields are separated by `delimiter`.
    A field that starts with a double quote is quoted: it ends at the next lone double quote, may
    contain delimiters and line breaks, and writes a literal double quote as two ("").
    After a closing quote only a delimiter, a line break or the end of the text may follow.
    A double quote inside an unquoted field is an ordinary character. An empty field (for example
    after a trailing delimiter) is the empty string. ValueError for an unterminated quoted field or
    for characters after a closing quote.
    """
    rows, row, field = [], [], []
    in_quotes = quoted = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_quotes:
            if ch == '"':
                if i + 1 < n and text[i + 1] == '"':
                    field.append('"')
                    i += 2
                    continue
                in_quotes = False
                i += 1
                if i < n and text[i] != delimiter and text[i] != "\n" and text[i:i + 2] != "\r\n":
                    raise ValueError(f"unexpected character after closing quote at {i}")
                continue
            field.append(ch)
            i += 1
            continue
        if ch == '"' and not field and not quoted:
            in_quotes = quoted = True
        elif ch == delimiter:
            row.append("".join(field))
            field, quoted = [], False
        elif ch == "\n" or text[i:i + 2] == "\r\n":
            row.append("".join(field))
            rows.append(row)
            row, field, quoted = [], [], False
            if ch == "\r":
                i += 1
        else:
            field.append(ch)
        i += 1
    if in_quotes:
        raise ValueError("unterminated quoted field")
    if field or row or quoted:
        row.append("".join(field))
        rows.append(row)
    return rows


def to_dicts(text, delimiter=","):
    """Records as dicts keyed by the first record (the header); [] if there is no header.

    ValueError if a record does not have as many fields as the header.
    """
    rows = parse(text, delimiter)
    if not rows:
        return []
    header = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(header):
            raise ValueError(f"record has {len(r)} fields, header has {len(header)}")
        out.append(dict(zip(header, r)))
    return out


def format_row(fields, delimiter=","):
    """One CSV record (without line terminator) that parse() reads back as `fields`.

    A field is quoted only if it contains the delimiter, a double quote, "\\n" or "\\r", or is
    empty while being the only field; inner double quotes are doubled.
    """
    out = []
    for f in fields:
        if (delimiter in f or '"' in f or "\n" in f or "\r" in f) or (f == "" and len(fields) == 1):
            f = '"' + f.replace('"', '""') + '"'
        out.append(f)
    return delimiter.join(out)
PYEOF
python3 -m unittest 2>&1 | tail -n 3
