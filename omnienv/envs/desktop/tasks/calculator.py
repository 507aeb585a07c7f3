"""Calculator tasks: the result must be on the calculator's display, selected there.

xcalc selects its whole display when it is clicked. The check asks the X server who owns the
PRIMARY selection: it must be the calculator the environment launched (a terminal selecting the
same digits is not it), and only then reads the text.
"""

from __future__ import annotations

from omnienv.envs.desktop.checks import DesktopTask, selected_in

__all__ = ["TEST", "TRAIN"]

SELECT = "then click the calculator's display so that the result is selected, ready to paste."

TRAIN = [
    DesktopTask(
        "calculator-answer",
        f"Use the calculator to compute 37 × 43, {SELECT}",
        selected_in("calculator", "1591"),
        apps=("calculator",),
        answer="1591",
    ),
    DesktopTask(
        "calculator-sqrt",
        f"Use the calculator to compute the square root of 1764, {SELECT}",
        selected_in("calculator", "42"),
        apps=("calculator",),
        answer="42",
    ),
]

TEST = [
    DesktopTask(
        "calculator-divide",
        f"Use the calculator to compute 1000 ÷ 8, {SELECT}",
        selected_in("calculator", "125"),
        apps=("calculator",),
        answer="125",
    ),
]
