import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = [l for l in read_tests("expected.tsv").splitlines() if l]
    got = read_app("todos.tsv")
    if got is None:
        return 0.0, {"rows_correct": 0}
    lines = [l.rstrip("\r") for l in got.splitlines() if l.strip()]
    correct = len(set(lines) & set(expected))
    ordered = lines == expected
    reward = correct / max(len(expected), len(lines))
    if not ordered:
        reward = min(reward, 0.9)
    return reward, {"rows_correct": correct, "rows_expected": len(expected), "order_correct": ordered}


main(grade)
