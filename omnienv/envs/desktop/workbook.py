"""Gnumeric workbooks: the spreadsheet's own file format, read back for checks and written for seeds.

A ``.gnumeric`` file is (usually gzipped) XML: sheets by name, each with its cells by row and
column; a constant cell keeps its value and type (``ValueType`` 40 for a number, 60 for text), a
formula cell keeps its expression (``=sum(B2:B6)``, references upper-cased by Gnumeric); a formula
copied to other cells is spelt out at the first of them only, the others name it by ``ExprID``, and
its relative references move with each cell, as in the spreadsheet. Checks read the file the
spreadsheet saved in its own home, so what they see is what Gnumeric wrote.

The file comes from a program the agent drives, which saves any text typed into a cell as the
whole file ("Text (configurable)", under any name), so it is read defensively: at most
:data:`XML_LIMIT` bytes once unpacked, no document type (no entities to expand), type numbers of a
few digits, and off the event loop.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from omnienv.core.threads import to_blocking_thread
from omnienv.envs.desktop.checks import Check
from omnienv.sandboxes.desktop import DesktopSession

__all__ = [
    "Cell",
    "cell_is",
    "formula_is",
    "parse_workbook",
    "sheet_names_are",
    "workbook_xml",
]

NS = "{http://www.gnumeric.org/v10.dtd}"
XML_LIMIT = 4 * 1024 * 1024
"""A task's workbook is a few kilobytes; read, this many bytes take about half a second and 70 MB."""
NUMBER, TEXT = 40, 60
SPREADSHEET = "spreadsheet"
_REF = re.compile(r"([A-Z]{1,3})([1-9][0-9]{0,6})")
_FORMULA_PART = re.compile(
    r"\"(?:[^\"]|\"\")*\"|'(?:[^']|'')*'"  # a string, a quoted sheet name: left as they are
    r"|(?<![A-Za-z0-9_.])(\$?)([A-Z]{1,3})(\$?)([0-9]{1,7})(?![A-Za-z0-9_.(!])"  # a cell reference
)


@dataclass(frozen=True, slots=True)
class Cell:
    """What a saved cell holds: a constant (``value_type`` set) or a formula (``formula`` set)."""

    text: str
    value_type: int | None = None
    formula: str | None = None

    def number(self) -> float | None:
        if self.value_type != NUMBER:
            return None
        try:
            return float(self.text)
        except ValueError:
            return None


Sheets = dict[str, dict[tuple[int, int], Cell]]


def _column(letters: str) -> int:
    column = 0
    for letter in letters:
        column = column * 26 + ord(letter) - ord("A") + 1
    return column - 1


def _letters(column: int) -> str:
    letters = ""
    column += 1
    while column:
        column, digit = divmod(column - 1, 26)
        letters = chr(ord("A") + digit) + letters
    return letters


def cell_position(ref: str) -> tuple[int, int]:
    """(row, column), from 0, of a reference such as ``"B7"``."""
    match = _REF.fullmatch(ref.upper())
    if match is None:
        raise ValueError(f"not a cell reference: {ref!r}")
    return int(match.group(2)) - 1, _column(match.group(1))


def relocated(formula: str, rows: int, columns: int) -> str:
    """``formula`` as it reads in the cell ``rows`` down and ``columns`` right of the one it was
    written at: relative references move, ``$``-anchored ones stay."""

    def move(match: re.Match[str]) -> str:
        if match.group(2) is None:
            return match.group(0)
        fixed_column, letters, fixed_row, digits = match.groups()
        row = int(digits) - 1 + (0 if fixed_row else rows)
        column = _column(letters) + (0 if fixed_column else columns)
        if row < 0 or column < 0:
            return "#REF!"
        return f"{fixed_column}{_letters(column)}{fixed_row}{row + 1}"

    return _FORMULA_PART.sub(move, formula)


def _unpacked(data: bytes) -> bytes | None:
    if data[:2] != b"\x1f\x8b":
        return data
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        xml = inflater.decompress(data, XML_LIMIT)
    except zlib.error:
        return None
    return None if inflater.unconsumed_tail else xml  # larger than the limit: not a workbook we read


def parse_workbook(data: bytes) -> Sheets | None:
    """Sheet name -> cells of a saved workbook, in the file's order; None if it is not one."""
    xml = _unpacked(data)
    # The checks read UTF-8 bytes, so the file is read as UTF-8 whatever it declares. A NUL is no XML
    # character: UTF-16 and UTF-32 (which a byte order mark would have the parser read) always have some.
    if xml is None or b"<!DOCTYPE" in xml or b"<!ENTITY" in xml or b"\0" in xml:
        return None
    parser = ElementTree.XMLParser(encoding="utf-8")
    try:
        parser.feed(xml)
        root = parser.close()
    except (ElementTree.ParseError, ValueError, LookupError):
        return None
    if root.tag != f"{NS}Workbook":
        return None
    sheets: Sheets = {}
    shared: dict[str, tuple[str, int, int]] = {}  # ExprID -> the expression, where it was spelt out
    for sheet in root.iterfind(f"{NS}Sheets/{NS}Sheet"):
        cells: dict[tuple[int, int], Cell] = {}
        for element in sheet.iterfind(f"{NS}Cells/{NS}Cell"):
            try:
                position = int(element.get("Row", "")), int(element.get("Col", ""))
            except ValueError:
                continue
            text = element.text or ""
            value_type = element.get("ValueType")
            expression_id = element.get("ExprID")
            if expression_id is not None and text.startswith("="):
                shared.setdefault(expression_id, (text, *position))
            formula: str | None = text if text.startswith("=") else None
            if formula is None and expression_id in shared:
                written, row, column = shared[expression_id]
                formula = relocated(written, position[0] - row, position[1] - column)
            if value_type is not None and formula is None:
                small = value_type.isascii() and value_type.isdigit() and len(value_type) <= 4
                cells[position] = Cell(text, int(value_type) if small else None)
            elif formula is not None:
                cells[position] = Cell(text, None, formula)
        sheets[sheet.findtext(f"{NS}Name") or ""] = cells
    return sheets


async def _workbook(desktop: DesktopSession, path: str) -> Sheets | None:
    data = await desktop.read_file(path, SPREADSHEET)
    return None if data is None else await to_blocking_thread(parse_workbook, data)


def _first_sheet(sheets: Sheets) -> dict[tuple[int, int], Cell]:
    return next(iter(sheets.values()), {})


def cell_is(path: str, ref: str, expected: float | str) -> Check:
    """The spreadsheet saved ``path`` (its own home) with the constant ``expected`` in ``ref`` of its
    first sheet: a number compared as a number, text exactly (a formula does not count)."""
    position = cell_position(ref)

    async def check(desktop: DesktopSession) -> bool:
        sheets = await _workbook(desktop, path)
        cell = _first_sheet(sheets).get(position) if sheets else None
        if cell is None or cell.formula is not None:
            return False
        if isinstance(expected, str):
            return cell.value_type == TEXT and cell.text == expected
        number = cell.number()
        return number is not None and abs(number - expected) <= 1e-9 * max(1.0, abs(expected))

    return check


def _normalised(formula: str) -> str:
    return re.sub(r"[\s$]", "", formula).upper()


def formula_is(path: str, ref: str, *accepted: str) -> Check:
    """The spreadsheet saved ``path`` with a formula in ``ref`` that reads as one of ``accepted``
    (case, spaces and ``$`` aside): a typed-in result is not a formula."""
    position = cell_position(ref)
    wanted = {_normalised(formula) for formula in accepted}

    async def check(desktop: DesktopSession) -> bool:
        sheets = await _workbook(desktop, path)
        cell = _first_sheet(sheets).get(position) if sheets else None
        return cell is not None and cell.formula is not None and _normalised(cell.formula) in wanted

    return check


def sheet_names_are(path: str, *names: str) -> Check:
    """The spreadsheet saved ``path`` with exactly these sheets, in this order."""

    async def check(desktop: DesktopSession) -> bool:
        sheets = await _workbook(desktop, path)
        return sheets is not None and list(sheets) == list(names)

    return check


def workbook_xml(sheet: str, rows: list[list[str | float]]) -> str:
    """A one-sheet workbook Gnumeric opens, rows from A1 down (numbers as numbers, the rest as text)."""
    cells = []
    for row, values in enumerate(rows):
        for column, value in enumerate(values):
            kind = TEXT if isinstance(value, str) else NUMBER
            shown = str(value)
            cells.append(f'<gnm:Cell Row="{row}" Col="{column}" ValueType="{kind}">{escape(shown)}</gnm:Cell>')
    name = escape(sheet)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<gnm:Workbook xmlns:gnm="http://www.gnumeric.org/v10.dtd">'
        f"<gnm:SheetNameIndex><gnm:SheetName>{name}</gnm:SheetName></gnm:SheetNameIndex>"
        f"<gnm:Sheets><gnm:Sheet><gnm:Name>{name}</gnm:Name><gnm:Cells>{''.join(cells)}</gnm:Cells>"
        "</gnm:Sheet></gnm:Sheets></gnm:Workbook>\n"
    )
