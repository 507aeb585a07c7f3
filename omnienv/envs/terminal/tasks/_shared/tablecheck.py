"""Grades a table the task asks for: the named output file in /app, row by row against
tests/expected.txt (its header first: a wrong header halves the credit). Shared by the log and
CSV analysis tasks that write one table (each links here from its tests/)."""

from verifylib import read_app, read_tests


def grade_table(name):
    expected = read_tests("expected.txt").splitlines()
    got = read_app(name)
    if got is None:
        return 0.0, {"rows_correct": 0}
    lines = [l.rstrip("\r") for l in got.splitlines() if l.strip()]
    header_ok = bool(lines) and lines[0].replace(" ", "") == expected[0]
    body, exp_body = lines[1:], expected[1:]
    correct = sum(1 for i, e in enumerate(exp_body) if i < len(body) and body[i] == e)
    reward = correct / max(len(exp_body), len(body)) * (1.0 if header_ok else 0.5)
    return reward, {"header_ok": header_ok, "rows_correct": correct, "rows_expected": len(exp_body)}

