import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    exp = load_json("expected.json")
    raw = read_app("suspects.json")
    try:
        got = json.loads(raw) if raw is not None else None
    except ValueError:
        got = None
    if not isinstance(got, list):
        return 0.0, {"valid_json": 0}
    correct = sum(1 for i, e in enumerate(exp) if i < len(got) and got[i] == e)
    return correct / max(len(exp), len(got)), {"entries_correct": correct, "entries_expected": len(exp)}


main(grade)
