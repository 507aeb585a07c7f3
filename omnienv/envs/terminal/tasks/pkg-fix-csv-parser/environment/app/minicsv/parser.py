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
    in_quotes = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_quotes:
            if ch == '"':
                in_quotes = False
            else:
                field.append(ch)
            i += 1
            continue
        if ch == '"':
            in_quotes = True
        elif ch == delimiter:
            row.append("".join(field))
            field = []
        elif ch == "\n":
            row.append("".join(field))
            rows.append(row)
            row, field = [], []
        else:
            field.append(ch)
        i += 1
    if field:
        row.append("".join(field))
    if row:
        rows.append(row)
    return rows


def to_dicts(text, delimiter=","):
    """Records as dicts keyed by the first record (the header); [] if there is no header.

    ValueError if a record does not have as many fields as the header.
    """
    rows = parse(text)
    if not rows:
        return []
    header = rows[0]
    return [dict(zip(header, r)) for r in rows[1:]]


def format_row(fields, delimiter=","):
    """One CSV record (without line terminator) that parse() reads back as `fields`.

    A field is quoted only if it contains the delimiter, a double quote, "\\n" or "\\r", or is
    empty while being the only field; inner double quotes are doubled.
    """
    out = []
    for f in fields:
        if delimiter in f or '"' in f:
            f = '"' + f + '"'
        out.append(f)
    return delimiter.join(out)
