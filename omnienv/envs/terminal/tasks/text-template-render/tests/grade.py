import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

import os

def grade():
    expected = load_json("expected.json")
    d = os.path.join(APP, "letters")
    if not inside_app(d) or not os.path.isdir(d):
        return 0.0, {"letters_correct": 0}
    names = [n for n in os.listdir(d)]
    correct = sum(1 for k, v in expected.items() if read_app(f"letters/{k}.txt") == v)
    return correct / max(len(expected), len(names)), {"letters_correct": correct, "letters_expected": len(expected), "files_found": len(names)}


main(grade)
