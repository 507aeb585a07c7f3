"""Spreadsheet tasks: a workbook Gnumeric saved in its own home, read back cell by cell.

Gnumeric runs with a home of its own, which no shell of the session mounts, so a workbook there
was saved by Gnumeric: ``ssconvert`` or ``echo`` in a terminal write to the session's home
instead. Formula tasks check the formula the file keeps, so typing in the result does not pass.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import Check, DesktopTask, all_of
from omnienv.envs.desktop.workbook import cell_is, formula_is, sheet_names_are, workbook_xml

__all__ = ["TEST", "TRAIN"]

BUDGET = workbook_xml(
    "Sheet1",
    [["Item", "Cost"], ["rent", 900], ["food", 320], ["travel", 85], ["phone", 30], ["books", 45]],
)
SCORES = workbook_xml(
    "Sheet1", [["Player", "Points"], ["ana", 41], ["ben", 77], ["cleo", 63], ["dev", 58], ["eli", 12]]
)
INVENTORY = workbook_xml("Sheet1", [["Fruit", "Count"], ["apples", 12], ["pears", 5], ["plums", 9]])
REPORT = workbook_xml("Sheet1", [["Quarter", "Sales"], ["Q1", 1200], ["Q2", 1350]])
PRICES = workbook_xml("Sheet1", [["Quantity", "Price", "Total"], [4, 2.5]])


def on_workbook(task_id: str, instruction: str, check: Check, document: str, workbook: str) -> DesktopTask:
    """A task on ``document``, seeded in the spreadsheet's home and open when the episode starts."""
    return DesktopTask(
        task_id,
        instruction,
        check,
        apps=(f"spreadsheet:{document}",),
        app_files={"spreadsheet": {document: workbook}},
    )


SAVE_AS = "then save the workbook in your home folder as"

TRAIN = [
    DesktopTask(
        "spreadsheet-number",
        f"The spreadsheet shows a new workbook. Put the number 42 in cell A1, {SAVE_AS} answer.gnumeric.",
        cell_is("answer.gnumeric", "A1", 42),
        apps=("spreadsheet",),
    ),
    DesktopTask(
        "spreadsheet-headers",
        f"The spreadsheet shows a new workbook. Type Name into cell A1 and Score into B1, {SAVE_AS} scores.gnumeric.",
        all_of(cell_is("scores.gnumeric", "A1", "Name"), cell_is("scores.gnumeric", "B1", "Score")),
        apps=("spreadsheet",),
    ),
    on_workbook(
        "spreadsheet-sum",
        "The spreadsheet has budget.gnumeric open. In cell B7, enter a formula that adds up B2 to B6 "
        "with the SUM function, then save the workbook.",
        formula_is("budget.gnumeric", "B7", "=SUM(B2:B6)"),
        "budget.gnumeric",
        BUDGET,
    ),
    on_workbook(
        "spreadsheet-fix-value",
        "The spreadsheet has inventory.gnumeric open. The count of pears is wrong: it should be 17. "
        "Correct it (leave the other cells as they are) and save the workbook.",
        all_of(
            cell_is("inventory.gnumeric", "B3", 17),
            cell_is("inventory.gnumeric", "A3", "pears"),
            cell_is("inventory.gnumeric", "B2", 12),
            cell_is("inventory.gnumeric", "B4", 9),
        ),
        "inventory.gnumeric",
        INVENTORY,
    ),
]

TEST = [
    on_workbook(
        "spreadsheet-max",
        "The spreadsheet has scores.gnumeric open. In cell D1, enter a formula that finds the largest "
        "of B2 to B6 with the MAX function, then save the workbook.",
        formula_is("scores.gnumeric", "D1", "=MAX(B2:B6)"),
        "scores.gnumeric",
        SCORES,
    ),
    on_workbook(
        "spreadsheet-rename-sheet",
        "The spreadsheet has report.gnumeric open. Rename its sheet to Summary, then save the workbook.",
        all_of(sheet_names_are("report.gnumeric", "Summary"), cell_is("report.gnumeric", "B3", 1350)),
        "report.gnumeric",
        REPORT,
    ),
    on_workbook(
        "spreadsheet-product",
        "The spreadsheet has prices.gnumeric open. In cell C2, enter a formula that multiplies the "
        "quantity in A2 by the price in B2, then save the workbook.",
        formula_is("prices.gnumeric", "C2", "=A2*B2", "=B2*A2", "=PRODUCT(A2:B2)", "=PRODUCT(A2,B2)"),
        "prices.gnumeric",
        PRICES,
    ),
]
