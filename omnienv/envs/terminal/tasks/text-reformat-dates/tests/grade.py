import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    original = read_tests("original.txt").split("\n")
    expected = read_tests("expected.txt").split("\n")
    got = read_app("journal.txt")
    if got is None:
        return 0.0, {"dates_lines_correct": 0}
    lines = got.split("\n")
    if len(lines) != len(expected):
        return 0.0, {"line_count_ok": 0}
    change = [i for i in range(len(expected)) if expected[i] != original[i]]
    keep = [i for i in range(len(expected)) if expected[i] == original[i]]
    changed_ok = sum(1 for i in change if lines[i] == expected[i])
    kept_ok = all(lines[i] == expected[i] for i in keep)
    reward = changed_ok / len(change) * (1.0 if kept_ok else 0.5)
    return reward, {"date_lines_correct": changed_ok, "date_lines_total": len(change), "other_lines_unchanged": kept_ok}


main(grade)
