import sys

sys.path.insert(0, "/tests")
from verifylib import *  # noqa: E402,F403

def grade():
    exp = load_json("expected.json")
    raw = read_app("report.json")
    try:
        got = json.loads(raw) if raw is not None else None
    except ValueError:
        got = None
    if not isinstance(got, dict):
        return 0.0, {"valid_json": 0}
    def same(a, b):
        if isinstance(b, float):
            return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a - b) < 5e-5
        if isinstance(b, int):
            return isinstance(a, (int, float)) and not isinstance(a, bool) and a == b
        return a == b
    parts = {k: same(got.get(k), v) for k, v in exp.items()}
    return fraction(parts), parts


main(grade)
