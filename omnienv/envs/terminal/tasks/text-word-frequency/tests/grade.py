import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = read_tests("expected.txt").splitlines()
    got = read_app("top_words.txt")
    if got is None:
        return 0.0, {"lines_correct": 0}
    lines = [l.rstrip("\r") for l in got.splitlines()]
    correct = sum(1 for i, e in enumerate(expected) if i < len(lines) and lines[i].strip() == e)
    if len(lines) != len(expected):
        correct = min(correct, len(expected) - 1)
    return correct / len(expected), {"lines_correct": correct, "lines_total": len(expected)}


main(grade)
