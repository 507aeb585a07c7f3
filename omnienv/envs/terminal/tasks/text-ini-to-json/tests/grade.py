import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    expected = load_json("expected.json")
    raw = read_app("config.json")
    if raw is None:
        return 0.0, {"sections_correct": 0}
    try:
        got = json.loads(raw)
    except ValueError:
        return 0.0, {"valid_json": 0, "sections_correct": 0}
    if not isinstance(got, dict):
        return 0.0, {"valid_json": 1, "sections_correct": 0}
    def same(a, b):
        return type(a) is type(b) and (a == b if not isinstance(a, dict) else
               a.keys() == b.keys() and all(same(a[k], b[k]) for k in a))
    correct = sum(1 for k, v in expected.items() if k in got and same(got[k], v))
    total = max(len(expected), len(got))
    return correct / total, {"valid_json": 1, "sections_correct": correct, "sections_total": len(expected)}


main(grade)
